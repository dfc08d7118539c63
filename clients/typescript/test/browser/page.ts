/**
 * The page of the browser tests (bundled by esbuild into build/page/page.js,
 * served by the replicas): TanStack AI's ChatClient over
 * fetchServerSentEvents('/api/chat') with stallFetch, each message rendered
 * into #messages as it streams:
 *
 *   <div class="message" data-role="assistant" data-id="<message id>">t0 t1 ...</div>
 *
 * The query string sets stallFetch's silenceMs and the reconnect options
 * (?silenceMs=2000&maxAttempts=20&delayMs=250, the defaults).  For the test,
 * `window.chatTest`: send(text) starts a run; state() says the client's
 * status and error, the messages as rendered, when each token "tN" first
 * showed in the DOM (Date.now()), and every request the client made.
 */
import { ChatClient, fetchServerSentEvents, type UIMessage } from '@tanstack/ai-client';

import { stallFetch } from '../../src/browser.js';

interface RequestNote {
  at: number;
  method: string;
  lastEventId: string | null;
  outcome: string;
}

export interface PageState {
  status: string;
  error: string | null;
  messages: Array<{ id: string; role: string; text: string }>;
  /** tokenSeenAt[i]: when "t<i>" first showed in the DOM. */
  tokenSeenAt: number[];
  requests: RequestNote[];
}

declare global {
  interface Window {
    chatTest: { send: (text: string) => void; state: () => PageState };
  }
}

const query = new URLSearchParams(location.search);
const number = (name: string, fallback: number): number => {
  const value = query.get(name);
  return value === null ? fallback : Number(value);
};

const requests: RequestNote[] = [];
const stalling = stallFetch({ silenceMs: number('silenceMs', 2000) });
/** stallFetch, with each request noted. */
const noted: typeof fetch = async (input, init) => {
  const note: RequestNote = {
    at: Date.now(),
    method: init?.method ?? 'GET',
    lastEventId: new Headers(init?.headers).get('Last-Event-ID'),
    outcome: 'pending',
  };
  requests.push(note);
  try {
    const response = await stalling(input, init);
    note.outcome = String(response.status);
    return response;
  } catch (error) {
    note.outcome = `failed: ${String(error)}`;
    throw error;
  }
};

const list = document.getElementById('messages')!;
const tokenSeenAt: number[] = [];
let lastError: string | null = null;

const textOf = (message: UIMessage): string =>
  message.parts.map((part) => (part.type === 'text' ? part.content : '')).join('');

function render(messages: UIMessage[]): void {
  for (const message of messages) {
    let element = list.querySelector<HTMLElement>(`[data-id="${CSS.escape(message.id)}"]`);
    if (element === null) {
      element = document.createElement('div');
      element.className = 'message';
      element.dataset['id'] = message.id;
      element.dataset['role'] = message.role;
      list.append(element);
    }
    const text = textOf(message);
    if (element.textContent !== text) element.textContent = text;
  }
  // When each token first showed (in any assistant message).
  const now = Date.now();
  for (const element of list.querySelectorAll<HTMLElement>('[data-role="assistant"]')) {
    for (const match of (element.textContent ?? '').matchAll(/t(\d+) /g)) {
      const i = Number(match[1]);
      if (tokenSeenAt[i] === undefined) tokenSeenAt[i] = now;
    }
  }
}

const client = new ChatClient({
  connection: fetchServerSentEvents('/api/chat', {
    fetchClient: noted,
    reconnect: { maxAttempts: number('maxAttempts', 20), delayMs: number('delayMs', 250) },
  }),
  onMessagesChange: render,
  onError: (error) => {
    lastError = String(error);
  },
});

window.chatTest = {
  send: (text) => {
    client.sendMessage(text).catch((error: unknown) => {
      lastError = String(error);
    });
  },
  state: () => ({
    status: client.getStatus(),
    error: lastError ?? (client.getError() === undefined ? null : String(client.getError())),
    messages: [...list.querySelectorAll<HTMLElement>('.message')].map((e) => ({
      id: e.dataset['id'] ?? '',
      role: e.dataset['role'] ?? '',
      text: e.textContent ?? '',
    })),
    tokenSeenAt: [...tokenSeenAt],
    requests: requests.map((r) => ({ ...r })),
  }),
};
