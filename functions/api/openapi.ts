import { OpenAPIHono } from "@hono/zod-openapi";
import { mergePath } from "hono/utils/url";
import { documentConfig, registerSecurity } from "./openapi-parts.ts";
import { ROUTES } from "./routes/index.ts";

/**
 * The OpenAPI 3.1 document of the API, generated from its declared routes (the same objects the
 * app registers its handlers on; the app serves this document at /openapi.json).
 *
 * @example
 * const doc = openApiDocument([{ url: "https://api.example.com" }]);
 */
export function openApiDocument(servers?: { url: string; description?: string }[]) {
  const app = new OpenAPIHono();
  for (const [prefix, routes] of Object.entries(ROUTES)) {
    for (const route of Object.values(routes)) app.openAPIRegistry.registerPath({ ...route, path: prefix ? mergePath(prefix, route.path) : route.path });
  }
  registerSecurity(app);
  return app.getOpenAPI31Document(documentConfig(servers));
}
