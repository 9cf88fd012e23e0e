import { accountRoutes } from "./account.ts";
import { decisionRoutes } from "./decisions.ts";
import { experimentRoutes } from "./experiments.ts";
import { gatewayRoutes } from "./gateway.ts";
import { keyRoutes } from "./keys.ts";
import { modelRoutes } from "./models.ts";
import { policyEndpointRoutes } from "./policy-endpoints.ts";
import { poolRoutes } from "./pools.ts";
import { profileRoutes } from "./profiles.ts";
import { quoteRoutes } from "./quotes.ts";
import { rescueRoutes } from "./rescues.ts";
import { routeRoutes } from "./route.ts";

/** Every resource's declared routes, by the prefix the app mounts it under (paths relative to it). */
export const ROUTES = {
  "/v1/route": routeRoutes,
  "/v1/pools": poolRoutes,
  "/v1/profiles": profileRoutes,
  "/v1/decisions": decisionRoutes,
  "/v1/rescues": rescueRoutes,
  "/v1/policy-endpoints": policyEndpointRoutes,
  "/v1/experiments": experimentRoutes,
  "/v1/models": modelRoutes,
  "/v1/quotes": quoteRoutes,
  "/v1/gateway": gatewayRoutes,
  "/v1/keys": keyRoutes,
  "": accountRoutes,
} as const;
