/**
 * The page: TanStack's own browser client (`@tanstack/ai-client`) on the
 * durable chat route, with `stallFetch` so that a replica that stops
 * answering (or a 502 from the load balancer) makes the client reconnect.
 * Bundled for the browser by `npm run build` (esbuild).
 */
import { ChatClient, fetchServerSentEvents, type UIMessage } from '@tanstack/ai-client';
import { stallFetch } from 'sandbox-store-client/browser';

const list = document.querySelector<HTMLOListElement>('#messages');
const form = document.querySelector<HTMLFormElement>('#ask');
const status = document.querySelector<HTMLElement>('#status');

function textOf(message: UIMessage): string {
  return message.parts.map((part) => (part.type === 'text' ? part.content : '')).join('');
}

function render(messages: UIMessage[]): void {
  if (list === null) return;
  list.replaceChildren(
    ...messages.map((message) => {
      const item = document.createElement('li');
      item.dataset['role'] = message.role;
      item.dataset['id'] = message.id;
      item.textContent = textOf(message);
      return item;
    }),
  );
}

const client = new ChatClient({
  connection: fetchServerSentEvents('/api/chat', {
    // The route sends a heartbeat every 5 s while it waits; 15 s of silence is a stopped replica.
    fetchClient: stallFetch({ silenceMs: 15_000 }),
    // Attempts are spent only on failed connections (see stallFetch): room for the balancer to notice a dead replica.
    reconnect: { maxAttempts: 20, delayMs: 250 },
  }),
  onMessagesChange: render,
  onErrorChange: (error) => {
    if (status !== null) status.textContent = error === undefined ? '' : `error: ${error.message}`;
  },
  onLoadingChange: (loading) => {
    if (status !== null) status.dataset['loading'] = String(loading);
  },
});

form?.addEventListener('submit', (event) => {
  event.preventDefault();
  const input = form.querySelector<HTMLInputElement>('input');
  const text = input?.value.trim() ?? '';
  if (text === '' || input === null) return;
  input.value = '';
  void client.sendMessage(text);
});
