/**
 * A load balancer in front of the replicas, in a few lines of Node.js: TCP
 * round robin over the replicas whose health check passed, as a real one
 * (nginx, HAProxy, a cloud load balancer) is set up for this app:
 *
 * - a health check with a timeout (GET /health every `checkMs`, failed
 *   after `checkTimeoutMs` without an answer): a replica that stopped
 *   (SIGSTOP, a hung event loop) still accepts connections, so accepting
 *   one proves nothing;
 * - a new connection goes to the next healthy replica; one that refuses it
 *   (killed since its last check) is marked down and the next healthy one
 *   gets the connection (nothing was sent yet, so this is safe for any
 *   request); with none left the connection is closed, and the browser
 *   retries;
 * - a connection already open to a replica that turns unhealthy is cut, so
 *   that the browser reconnects (a keep-alive connection would otherwise
 *   carry its next request to the stopped replica).
 *
 *   BACKENDS=127.0.0.1:3001,127.0.0.1:3002 PORT=3000 node dist/balancer.js
 *
 * `cut()` (SIGUSR2 to the process) closes every client connection: a
 * network blip.  `healthy()` lists the replicas (host:port) that get new
 * connections now.  The browser tests of the client
 * (clients/typescript/test/browser) run the app's replicas behind it.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface Balancer {
  port: number;
  /** Close every client connection now (the replicas live on); returns how many. */
  cut: () => number;
  /** The replicas (host:port) whose last health check passed. */
  healthy: () => string[];
  close: () => Promise<void>;
}

interface Backend {
  host: string;
  port: number;
  healthy: boolean;
  sockets: Set<Socket>;
}

export async function startBalancer(
  backends: Array<{ host: string; port: number }>,
  options: { port?: number; checkMs?: number; checkTimeoutMs?: number } = {},
): Promise<Balancer> {
  const checkMs = options.checkMs ?? 200;
  const checkTimeoutMs = options.checkTimeoutMs ?? 1_000;
  const pool: Backend[] = backends.map((b) => ({ ...b, healthy: true, sockets: new Set() }));
  const clients = new Set<Socket>();
  let next = 0;

  const markDown = (backend: Backend): void => {
    if (backend.healthy) for (const socket of backend.sockets) socket.destroy();
    backend.healthy = false;
  };
  const check = async (backend: Backend): Promise<void> => {
    let healthy = false;
    try {
      const url = `http://${backend.host}:${backend.port}/health`;
      healthy = (await fetch(url, { signal: AbortSignal.timeout(checkTimeoutMs) })).ok;
    } catch {
      healthy = false;
    }
    if (healthy) backend.healthy = true;
    else markDown(backend);
  };
  let checking = true;
  const loop = async (backend: Backend): Promise<void> => {
    while (checking) {
      await check(backend);
      await new Promise((resolve) => setTimeout(resolve, checkMs));
    }
  };
  for (const backend of pool) void loop(backend);

  /** Connect `client` to the next healthy replica it has not tried; its bytes wait (paused) until one accepts. */
  const route = (client: Socket, tried: Set<Backend>): void => {
    const healthy = pool.filter((b) => b.healthy && !tried.has(b));
    const backend = healthy[next++ % Math.max(healthy.length, 1)];
    if (backend === undefined) return void client.destroy(); // none left: the browser retries
    tried.add(backend);
    const upstream = connect(backend.port, backend.host);
    upstream.once('error', () => {
      markDown(backend); // refused (or failed) before a byte went out: the next one
      route(client, tried);
    });
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      if (client.destroyed) return void upstream.destroy(); // the client left (or was cut) meanwhile
      backend.sockets.add(client);
      const drop = (): void => {
        backend.sockets.delete(client);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
  };

  const server = createServer((client) => {
    client.pause();
    clients.add(client);
    client.on('close', () => clients.delete(client));
    client.on('error', () => client.destroy());
    route(client, new Set());
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    cut: () => {
      const n = clients.size;
      for (const client of clients) client.destroy();
      return n;
    },
    healthy: () => pool.filter((b) => b.healthy).map((b) => `${b.host}:${b.port}`),
    close: async () => {
      checking = false;
      for (const client of clients) client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const backends = (process.env['BACKENDS'] ?? '')
    .split(',')
    .filter(Boolean)
    .map((hostPort) => {
      const [host = '127.0.0.1', port = '0'] = hostPort.split(':');
      return { host, port: Number(port) };
    });
  const balancer = await startBalancer(backends, { port: Number(process.env['PORT'] ?? 3000) });
  process.on('SIGUSR2', () => balancer.cut());
  process.stdout.write(`listening ${balancer.port}\n`);
}
