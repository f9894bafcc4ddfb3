// One MCP session through the Node SDK configured for OAuth (an authProvider), through an
// `Unauthorized` proxy: list tools, make one call. Prints one JSON object: what happened,
// how long it took, and whether the SDK sent the user to an authorization page.
// Usage: node mcp_oauth.mjs URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const out = { kind: null, message: null, redirected: false, seconds: null };
const started = performance.now();
let info;
let tokens;
const authProvider = {
  get redirectUrl() {
    return "http://127.0.0.1:9/callback";
  },
  get clientMetadata() {
    return { client_name: "chaosproxy-matrix", redirect_uris: ["http://127.0.0.1:9/callback"] };
  },
  clientInformation: () => info,
  saveClientInformation: (value) => {
    info = value;
  },
  tokens: () => tokens,
  saveTokens: (value) => {
    tokens = value;
  },
  redirectToAuthorization: () => {
    out.redirected = true;
  },
  saveCodeVerifier: () => {},
  codeVerifier: () => "verifier",
};
const client = new Client({ name: "chaosproxy-node-oauth", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
const bound = new Promise((_, reject) => setTimeout(() => reject(new Error("hang")), 20000));
try {
  const run = (async () => {
    await client.connect(transport);
    await client.listTools();
    return client.callTool(
      { name: "list_meetings", arguments: { start_date: "2026-03-02", end_date: "2026-03-06" } },
      undefined,
      { timeout: 10000 },
    );
  })();
  const result = await Promise.race([run, bound]);
  out.kind = result.isError ? "tool_error" : "ok";
} catch (err) {
  const message = String(err && err.message ? err.message : err);
  out.kind = message === "hang" ? "hang" : "raised";
  out.message = `${err && err.constructor ? err.constructor.name : "Error"}: ${message}`.slice(0, 600);
}
out.seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify(out));
process.exit(0);
