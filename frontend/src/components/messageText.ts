/**
 * The Markdown of a chat message as LangGraph delivers it (the SDK's `Message`): its `content`
 * when that is a string, else its text parts joined — so components can take a message directly.
 */

import { isRecordObject } from "../contract.js";
import { textParts } from "../envelope.js";

/** The text of `message.content` (string, or the `{type: "text"}` parts joined); "" otherwise. */
export function messageMarkdown(message: unknown): string {
  if (!isRecordObject(message)) return "";
  let content: unknown;
  try {
    content = message["content"];
  } catch {
    return "";
  }
  return textParts(content).join("");
}

/** A component's Markdown: its `markdown` prop, else the text of `messages[messageIndex]`. */
export function markdownOf(props: {
  readonly markdown?: unknown;
  readonly messages?: readonly unknown[] | undefined;
  readonly messageIndex?: number | undefined;
}): string {
  if (typeof props.markdown === "string") return props.markdown;
  if (props.markdown !== undefined || props.messages === undefined || props.messageIndex === undefined) return "";
  return messageMarkdown(props.messages[props.messageIndex]);
}
