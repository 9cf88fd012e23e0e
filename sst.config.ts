/// <reference path="./.sst/platform/config.d.ts" />
// SST refuses top-level imports here: stacks are loaded dynamically inside run().
export default $config({
  app(input) {
    return { name: "harness-s", home: "aws", removal: input?.stage === "production" ? "retain" : "remove" };
  },
  async run() {
    const { controlPlane } = await import("./stacks/control-plane");
    // HARNESS_S_POLICY_GPU=off deploys without the GPU endpoint (set PolicyEndpointUrl to one run elsewhere).
    return controlPlane({ gpuEndpoint: process.env.HARNESS_S_POLICY_GPU !== "off" });
  },
});
