// The benchmark families this service and the CLI know, each registered by importing its module
// (in this order: help and error messages list them so). A new family is one more line here.
import "@harness-s/envs/embedded/family";
import "@harness-s/dbbench/family";
import "@harness-s/envs/appworld/family";
import "@harness-s/envs/swe/family";

export { familyFor, familyNames } from "@harness-s/envs";
