// Lists the tools of an MCP server and calls one, printing one JSON line.
// Usage: node mcp_list_and_call.mjs URL TOOL 'JSON_ARGS'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, rawArgs] = process.argv.slice(2);
const client = new Client({ name: "chaosproxy-node-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const listed = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(rawArgs || "{}") });
console.log(JSON.stringify({
  tools: listed.tools.map((t) => t.name),
  isError: result.isError ?? false,
  structuredContent: result.structuredContent ?? null,
  text: (result.content ?? []).map((c) => c.text ?? "").join(""),
  sessionId: transport.sessionId ?? null,
}));
await transport.terminateSession().catch(() => {});
await client.close();
