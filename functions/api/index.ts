// The API as the local runtime (the CLI's serve and bench) takes it, by name.
export { bodyLimitOf, createApp } from "./app.ts";
export { listen, memoryApiDeps } from "./local.ts";
export { withApiCaches, type ApiDeps } from "./deps.ts";
export { CONSOLE_DIST, loadConsoleAssets } from "./console.ts";
export { gatewaySettings } from "./gateway-setup.ts";
export { GatewayEnv, gatewayEnvs } from "./gateway-config.ts";
