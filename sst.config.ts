/// <reference path="./.sst/platform/config.d.ts" />
// SST refuses top-level imports here: stacks are loaded dynamically inside run().
// The serverless control plane (tables, queues, functions, API) lands with issue 3.
export default $config({
  app(input) {
    return { name: "harness-s", home: "aws", removal: input?.stage === "production" ? "retain" : "remove" };
  },
  async run() {
    const { controlPlane } = await import("./stacks/control-plane");
    return controlPlane();
  },
});
