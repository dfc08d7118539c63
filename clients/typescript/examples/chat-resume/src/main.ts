/**
 * `npm start`: two replicas of the app (server.ts) and the load balancer
 * (balancer.ts) in front of them, on this machine:
 *
 *   http://127.0.0.1:3000/   the page, through the balancer
 *   replicas on 3001 and 3002
 *
 * Ask something, then kill the replica that answers (its pid is printed)
 * with `kill -9` or stop it with `kill -STOP`: the answer goes on in the
 * page, from the other replica, without a token lost or repeated.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { startBalancer } from './balancer.js';

const server = fileURLToPath(new URL('./server.js', import.meta.url));
const ports = [3001, 3002];
for (const [i, port] of ports.entries()) {
  const replica = String.fromCharCode(97 + i);
  const child = spawn(process.execPath, [server], {
    env: { ...process.env, PORT: String(port), REPLICA: replica },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  process.stdout.write(`replica ${replica}: pid ${child.pid}, port ${port}\n`);
}
const balancer = await startBalancer(
  ports.map((port) => ({ host: '127.0.0.1', port })),
  { port: Number(process.env['PORT'] ?? 3000) },
);
process.stdout.write(`open http://127.0.0.1:${balancer.port}/\n`);
