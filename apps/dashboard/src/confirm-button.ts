// A button for what cannot be undone: the first click asks, in place, and only "Yes" does it.
import { html } from "htm/preact";
import { useState } from "preact/hooks";

export interface ConfirmButtonProps {
  /** The button's label, and what the question asks about. */
  label: string;
  question: string;
  onConfirm: () => void;
  disabled?: boolean;
  testId: string;
  /** Styled as a destructive action (red). @default true */
  danger?: boolean;
}

export function ConfirmButton({ label, question, onConfirm, disabled = false, testId, danger = true }: ConfirmButtonProps) {
  const [asking, setAsking] = useState(false);
  const kind = danger ? "danger" : "";
  if (!asking) return html`<button class=${kind} data-testid=${testId} disabled=${disabled} onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm" data-testid=${`${testId}-confirm`}>
    ${question}
    <button
      class=${kind}
      data-testid=${`${testId}-yes`}
      onClick=${() => {
        setAsking(false);
        onConfirm();
      }}
    >Yes, ${label.toLowerCase()}</button>
    <button data-testid=${`${testId}-no`} onClick=${() => setAsking(false)}>No</button>
  </span>`;
}
