// The daily flow through openapi-fetch and the types openapi-typescript generates from
// {docs_url}/openapi.json (docs/clients.md). tests/api/test_generated_clients.py checks that it
// compiles (tsc --noEmit) against the types of the served document.
import createClient from "openapi-fetch";
import type { components, paths } from "./herald";

type Publication = components["schemas"]["Publication"];
type Problem = components["schemas"]["ErrorModel"];

export async function dailyFlow(baseUrl: string, token: string): Promise<Publication[]> {
  const herald = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}` },
  });

  const workspaces = await herald.GET("/api/v1/workspaces", { params: { query: { limit: 10 } } });
  if (!workspaces.data) throw new Error(workspaces.error.title);
  const workspaceId = workspaces.data.items[0].id;

  const connected = await herald.POST("/api/v1/accounts/connect", {
    body: { workspace_id: workspaceId, provider: "feed", fields: { title: "My news" } },
  });
  const account = connected.data?.account;
  if (!account) throw new Error("the feed connects at once");

  const created = await herald.POST("/api/v1/publications", {
    params: { header: { "Idempotency-Key": crypto.randomUUID() } },
    body: {
      workspace_id: workspaceId,
      text: "Hello from a generated client",
      destinations: [{ account_id: account.id }],
    },
  });
  if (!created.data) throw new Error(created.error.title);
  const publicationId = created.data.id;

  await herald.POST("/api/v1/publications/{publication_id}/publish-now", {
    params: { path: { publication_id: publicationId } },
    body: {},
  });
  let status: Publication["status"] = created.data.status;
  while (status !== "published" && status !== "failed" && status !== "partially_published") {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const current = await herald.GET("/api/v1/publications/{publication_id}", {
      params: { path: { publication_id: publicationId } },
    });
    if (!current.data) throw new Error(current.error.title);
    status = current.data.status;
  }

  const all: Publication[] = [];
  let cursor: string | undefined;
  do {
    const page = await herald.GET("/api/v1/publications", {
      params: { query: { workspace_id: workspaceId, limit: 20, status: "published", cursor } },
    });
    if (!page.data) throw new Error(page.error.title);
    all.push(...page.data.items);
    cursor = page.data.next_cursor ?? undefined;
  } while (cursor);

  const invalid = await herald.POST("/api/v1/publications", {
    body: { workspace_id: workspaceId, destinations: [] },
  });
  const problem: Problem | undefined = invalid.error;
  console.log(invalid.response.status, problem?.errors?.[0]?.location); // 422 body.destinations

  const missing = await herald.GET("/api/v1/publications/{publication_id}", {
    params: { path: { publication_id: "00000000-0000-0000-0000-000000000000" } },
  });
  console.log(missing.response.status, missing.error?.code); // 404 not_found
  return all;
}
