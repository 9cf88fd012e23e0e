// OpenEnv: the protocol, the client and the server.
export {
  OpenEnvStepResult,
  OpenEnvServerMessage,
  CallToolAction,
  ListToolsAction,
  OpenEnvAction,
  OpenEnvResetData,
  OPENENV_ERROR_CODES,
  type OpenEnvErrorCode,
  OpenEnvClientMessage,
  OpenEnvTool,
  HarnessObservation,
} from "./protocol.ts";
export { type OpenEnvEnvironmentOptions, OpenEnvEnvironment } from "./client.ts";
export {
  startOpenEnvServer,
  IDLE_CLOSE,
  OPENENV_SERVER_DEFAULTS,
  type OpenEnvServerLimits,
  OPENENV_HTTP_STATUS,
  taskIdOfSeed,
  type OpenEnvServerOptions,
} from "./server.ts";
