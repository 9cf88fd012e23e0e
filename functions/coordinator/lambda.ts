import { awsConfigFromResources } from "../aws-config.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { createCoordinatorHandler } from "./handler.ts";
import { deployedCoordinatorDeps } from "./deployed.ts";

// Composition root of the `coordinator` worker: its linked resources, parsed once at cold start,
// and its SDK clients, given to `deployedCoordinatorDeps` (what it runs, and how: see there).
const config = awsConfigFromResources();

export const handler = createCoordinatorHandler(deployedCoordinatorDeps(config, lambdaClients(config)));
