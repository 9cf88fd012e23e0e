// How experiments are set up on a policy worker, a caller's environment or the queues, by name (the CLI's runtimes).
export { workerPolicySetup, type UsageReport, type WorkerDeps, type WorkerPolicyOptions } from "./worker-setup.ts";
export { trainedAtWorker, type ModelAtWorker } from "./trained-setup.ts";
export { callerEnvSetup } from "./caller-env-setup.ts";
export { queuedExperimentDeps } from "../coordinator/queued-experiment.ts";
