import { statisticalVoters } from "@harness-s/core/voting";
import { DynamoBallotStore } from "@harness-s/adapters/stores";
import { OpenAiVoter, REPLY_BYTES, boundedOpenAi } from "@harness-s/adapters/llm";
import { awsConfigFromResources } from "../aws-config.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { panelFromSecrets } from "../panel-config.ts";
import { createVoteHandler } from "./handler.ts";

// Composition root of the `vote` worker: the voter panel's voters when the VoterPanel secret is
// set; otherwise the statistical voters, plus one LLM voter when the LlmApiKey secret is set
// (model and base URL from LLM_MODEL / LLM_BASE_URL, read here only).
const config = awsConfigFromResources();
const { doc, metering } = lambdaClients(config);
const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys, llmApiKey: config.llmApiKey });
const single = config.llmApiKey
  ? [
      new OpenAiVoter(
        boundedOpenAi({
          apiKey: config.llmApiKey,
          baseURL: process.env.LLM_BASE_URL,
          timeoutMs: 20_000,
          maxRetries: 1,
          maxReplyBytes: REPLY_BYTES.ballot,
        }),
        {
          id: "llm",
          model: process.env.LLM_MODEL ?? "gpt-4o-mini",
        },
      ),
    ]
  : [];
export const handler = createVoteHandler({
  voters: panel?.voters ?? [...statisticalVoters, ...single],
  ballots: new DynamoBallotStore(doc, config.tables),
  metering,
});
