// An OpenAI-compatible endpoint whose every reply is an endless body (see hostile-rss.ts);
// sends its base URL to the parent once it listens.
import { startHostileOpenAi } from "../tests/hostile-openai.ts";

const server = await startHostileOpenAi(() => ({ endless: true }));
process.send?.(server.url);
process.on("disconnect", () => process.exit(0));
