/**
 * `npm start`: two replicas of the app (server.ts) and the load balancer
 * (balancer.ts) in front of them, on this machine:
 *
 *   http://127.0.0.1:3000/   the page, through the balancer
 *   replicas on 3001 and 3002
 *
 * (`PORT` moves all three: the balancer on PORT, the replicas on PORT + 1
 * and PORT + 2.)  Ask something, then kill the replica that answers (its
 * pid is printed) with `kill -9` or stop it with `kill -STOP`: the answer
 * goes on in the page, from the other replica, without a token lost or
 * repeated.  Ctrl-C stops everything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { startBalancer } from './balancer.js';

const server = fileURLToPath(new URL('./server.js', import.meta.url));
const base = Number(process.env['PORT'] ?? 3000);
const ports = [base + 1, base + 2];
const children: ChildProcess[] = [];
const listening: Array<Promise<void>> = [];
for (const [i, port] of ports.entries()) {
  const replica = String.fromCharCode(97 + i);
  const child = spawn(process.execPath, [server], {
    env: { ...process.env, PORT: String(port), REPLICA: replica },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  listening.push(
    new Promise((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`replica ${replica} exited with ${code}`)));
      child.stdout?.setEncoding('utf8').on('data', (text: string) => {
        if (text.includes('listening')) resolve();
      });
    }),
  );
  process.stdout.write(`replica ${replica}: pid ${child.pid}, port ${port}\n`);
}
const stop = (): void => {
  for (const child of children) child.kill('SIGKILL');
  process.exit(0);
};
process.on('SIGINT', stop).on('SIGTERM', stop);
await Promise.all(listening);
const balancer = await startBalancer(
  ports.map((port) => ({ host: '127.0.0.1', port })),
  { port: base },
);
process.stdout.write(`open http://127.0.0.1:${balancer.port}/\n`);
