import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import { mergePath } from "hono/utils/url";
import { documentConfig, documented, registerSecurity } from "./openapi-parts.ts";
import { ROUTES } from "./routes/index.ts";

/**
 * The OpenAPI 3.1 document of the API, generated from its declared routes (the same objects the
 * app registers its handlers on; the app serves this document at /openapi.json).
 *
 * @example
 * const doc = openApiDocument([{ url: "https://api.example.com" }]);
 */
export function openApiDocument(servers?: { url: string; description?: string }[]) {
  const routes = Object.entries(ROUTES).flatMap(([prefix, group]) =>
    Object.values(group).map(
      (route): RouteConfig => ({ ...route, path: prefix ? mergePath(prefix, route.path) : route.path }),
    ),
  );
  return documentOf(routes, servers);
}

/** The document of `routes` (full paths), each {@link documented}: what the app serves of its own registered routes. */
export function documentOf(routes: readonly RouteConfig[], servers?: { url: string; description?: string }[]) {
  const app = new OpenAPIHono();
  for (const route of routes) app.openAPIRegistry.registerPath(documented(route));
  registerSecurity(app);
  return app.getOpenAPI31Document(documentConfig(servers));
}
