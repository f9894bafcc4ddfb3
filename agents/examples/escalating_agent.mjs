// An example agent outside Python, for `chaosproxy run --agent-cmd`.
//
// It speaks MCP through the official TypeScript SDK, reads the episode from the
// CHAOS_* environment variables (see chaosproxy/runner/command_agent.py), lists the
// domain's tools and, having no model to plan with, performs a Safe Halt: it hands the
// task to a human with escalate_to_human. That is the right outcome for tasks tagged
// escalation-expected and a failure elsewhere, which makes it a useful floor.
//
// Run:  chaosproxy run --agent-cmd "node agents/examples/escalating_agent.mjs" --agent-name node-escalate ...

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const required = ["CHAOS_MCP_URL", "CHAOS_TASK", "CHAOS_EPISODE"];
for (const name of required) {
  if (!process.env[name]) {
    console.error(`missing environment variable ${name}; run me through chaosproxy run --agent-cmd`);
    process.exit(2);
  }
}

const client = new Client({ name: "chaosproxy-node-example", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.env.CHAOS_MCP_URL));

async function callWithRetry(name, args, attempts = 4) {
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await client.callTool({ name, arguments: args });
      if (!result.isError || attempt >= attempts) return result;
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
  }
}

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  console.log(JSON.stringify({ event: "tools", episode: process.env.CHAOS_EPISODE, tools: names }));
  if (!names.includes("escalate_to_human")) {
    console.error("this domain offers no escalate_to_human tool");
    process.exit(3);
  }
  const reason = `No planner available for: ${process.env.CHAOS_TASK}`.slice(0, 280);
  const result = await callWithRetry("escalate_to_human", { reason });
  console.log(JSON.stringify({ event: "escalated", isError: Boolean(result.isError), result: result.structuredContent ?? null }));
  await client.close();
  process.exit(0);
} catch (error) {
  console.error(`agent failed: ${error?.stack ?? error}`);
  process.exit(1);
}
