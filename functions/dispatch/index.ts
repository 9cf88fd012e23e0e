// The dispatch worker's handler, by name (the rescue bench runs it in process).
export { createDispatchHandler } from "./handler.ts";
export { createDeadLetterHandler } from "./dead-letters.ts";
