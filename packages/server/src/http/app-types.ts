import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";

/** The Fastify instance with zod route schemas (typed params, query and body in handlers). */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** A dialect plugin: registers its routes on an encapsulated instance whose every route carries the dialect. */
export function dialectPlugin(dialect: "openai" | "template", register: (app: App) => void) {
  return async (app: App) => {
    app.addHook("onRoute", (route) => {
      route.constraints = { ...route.constraints, dialect };
    });
    register(app);
  };
}
