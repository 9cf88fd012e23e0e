import { parseHarnessSpec, type HarnessSpec } from "@harness-s/core";

/** H0: a plain code-execution loop (AppWorld's ReAct-style setting), 12 rounds. */
export const appworldH0: HarnessSpec = parseHarnessSpec({
  id: "appworld-h0",
  description: "AppWorld's plain setting: write Python against apis.<app>.<api>(…), then submit",
  budget: { maxTurns: 12 },
  provenance: { direction: "base" },
});

const sibling = (id: string, direction: string, hypothesis: string, edit: Record<string, unknown>) =>
  parseHarnessSpec({
    id,
    budget: { maxTurns: 12 },
    ...edit,
    provenance: { direction, parent: appworldH0.id, hypothesis },
  });

/**
 * AppWorld siblings of H0, one edit each along one repair direction: the apps' docs up front, a
 * note on paging through list APIs, re-login after a 401, and a gate that keeps `submit` until a
 * change has been read back.
 */
export const appworldSiblings: HarnessSpec[] = [
  sibling(
    "appworld-api-docs",
    "recon",
    "agents guess API names and arguments; show the apps up front and say how to read an API's doc",
    {
      recon: { preview: ["api-docs"] },
      instruction: {
        systemAppend:
          "Before the first call to an API, read its doc: print(apis.api_docs.show_api_doc(app_name='…', api_name='…')).",
      },
    },
  ),
  sibling(
    "appworld-pagination",
    "contract",
    "agents read the first page of a list and miss the rest; say that list APIs are paged",
    {
      instruction: {
        toolNotes: {
          execute:
            "List APIs (show_…) return one page at a time: call them with page_index=0, 1, 2, … and stop at the first empty page; use every page before you answer or change anything.",
        },
      },
    },
  ),
  sibling("appworld-relogin", "recovery", "agents call apps without a token and stop at the 401; say how to log in", {
    postObservation: [
      {
        on: "app:unauthorized",
        hint: "execute",
        text: "The app answered 401: get the password with apis.supervisor.show_account_passwords(), call apis.<app>.login(username=<the supervisor's email>, password=…), and pass access_token=… to every call of that app.",
        maxFires: 2,
      },
    ],
  }),
  sibling(
    "appworld-verify-before-complete",
    "verification",
    "agents complete a task after a change they never read back; hold submit until a read follows the change",
    {
      commitGate: { requires: ["state:verified"], hint: "execute", maxBlocks: 1 },
      postObservation: [
        {
          on: "gate:*",
          hint: "execute",
          text: "Read back what you changed with the app's show_… API before you submit.",
          maxFires: 1,
        },
      ],
    },
  ),
];

export const appworldHarnesses = [appworldH0, ...appworldSiblings];
