// One MCP session through the Node SDK, as an agent uses it: list the tools, then make
// each call in order. Prints one JSON object: the tool names and what each call gave.
// Usage: node mcp_matrix.mjs URL 'JSON [[tool, args], ...]'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, rawCalls] = process.argv.slice(2);
const calls = JSON.parse(rawCalls || "[]");
const out = { tools: [], calls: [], listChanged: 0, connectError: null, listedS: null };
const started = performance.now();
const client = new Client({ name: "chaosproxy-node-matrix", version: "1.0.0" });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  out.listChanged += 1;
});
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.listedS = (performance.now() - started) / 1000;
} catch (err) {
  out.connectError = String(err && err.message ? err.message : err);
}
for (const [tool, args] of out.connectError ? [] : calls) {
  try {
    const result = await client.callTool({ name: tool, arguments: args }, undefined, {
      timeout: 10000,
    });
    out.calls.push({
      kind: result.isError ? "tool_error" : "ok",
      structured: result.structuredContent ?? null,
      text: (result.content ?? []).map((c) => c.text ?? "").join(""),
    });
  } catch (err) {
    const code = err && typeof err.code === "number" ? err.code : null;
    out.calls.push({
      kind: code !== null ? "rpc_error" : "client_error",
      code,
      message: String(err && err.message ? err.message : err),
    });
  }
}
console.log(JSON.stringify(out));
await transport.terminateSession().catch(() => {});
await client.close().catch(() => {});
