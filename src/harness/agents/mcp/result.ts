import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

/**
 * An MCP tool result as the model reads it: the text content joined; other content named so the model
 * knows it was there (an image cannot go into a chat tool message); structured content when there is no
 * text; `isError` results as `{"error": ...}`, the shape every failed tool of the bot returns.
 */
export function mapToolResult(raw: unknown): string {
  const parsed = CallToolResultSchema.safeParse(raw);
  // An old server's `{toolResult}` (the SDK accepts it): the model reads it as JSON.
  if (!parsed.success) return JSON.stringify(raw ?? {});
  const result = parsed.data;
  const parts = result.content.map((item) => {
    switch (item.type) {
      case "text":
        return item.text;
      case "image":
      case "audio":
        return `[${item.type} ${item.mimeType}, ${item.data.length} base64 characters]`;
      case "resource_link":
        return `[resource ${item.uri}${item.name ? ` (${item.name})` : ""}]`;
      case "resource":
        return "text" in item.resource ? item.resource.text : `[resource ${item.resource.uri}]`;
      default:
        return "";
    }
  });
  let text = parts.filter((part) => part !== "").join("\n");
  if (text === "" && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent);
  if (result.isError === true)
    return JSON.stringify({ error: text === "" ? "The tool reported an error" : text });
  return text === "" ? "{}" : text;
}
