/**
 * An error boundary per message: if rendering one message throws (a parser limit, a plugin bug,
 * hostile input nobody foresaw), that message shows its raw text — as a React text node, never
 * parsed — with a note, and the rest of the thread keeps rendering.
 */

import { Component, type ErrorInfo, type ReactElement, type ReactNode } from "react";

import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";

export interface MessageBoundaryProps {
  /** The message's raw text, shown as plain text if rendering fails. */
  readonly text: string;
  readonly children?: ReactNode;
  /** The note shown above the raw text (default: `labels.renderFailed`). */
  readonly labels?: Partial<KnowledgeLabels> | undefined;
  readonly className?: string | undefined;
  /** Called once per failure (e.g. to log it); the error never propagates further. */
  readonly onError?: ((error: unknown, info: ErrorInfo) => void) | undefined;
}

interface MessageBoundaryState {
  /** The text that failed to render (a new text — the next streamed token — tries again). */
  readonly failedText: string | null;
}

/** The raw text of a message shown as text, with a note saying why. */
export function PlainTextMessage({
  text,
  note,
  className,
}: {
  readonly text: string;
  readonly note: string;
  readonly className?: string | undefined;
}): ReactElement {
  return (
    <div className={className === undefined ? "dk-markdown dk-plain" : `dk-markdown dk-plain ${className}`}>
      <p className="dk-plain-note">{note}</p>
      <div className="dk-plain-text">{text}</div>
    </div>
  );
}

export class MessageBoundary extends Component<MessageBoundaryProps, MessageBoundaryState> {
  override state: MessageBoundaryState = { failedText: null };

  static getDerivedStateFromError(): Partial<MessageBoundaryState> {
    return { failedText: "" }; // completed in componentDidCatch / render with the current text
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    this.setState({ failedText: this.props.text });
    this.props.onError?.(error, info);
  }

  override render(): ReactNode {
    const { failedText } = this.state;
    const failed = failedText !== null && (failedText === "" || failedText === this.props.text);
    if (!failed) return this.props.children;
    return (
      <PlainTextMessage
        text={this.props.text}
        note={this.props.labels?.renderFailed ?? DEFAULT_LABELS.renderFailed}
        className={this.props.className}
      />
    );
  }

  override componentDidUpdate(previous: MessageBoundaryProps): void {
    // A failed message that changes (streaming) gets another chance to render as Markdown.
    if (this.state.failedText !== null && this.state.failedText !== "" && previous.text !== this.props.text) {
      this.setState({ failedText: null });
    }
  }
}
