// Headless runner for Stability Sim's engine (marcbrooker/stability-sim, TypeScript): runs one of
// two workloads shared with retrystorm and prints a JSON line with events, wall time and peak
// memory. The peer's code is NOT part of this repository: pass the path of a checkout with
// --peer (see benches/peers/README.md for how to obtain it and run this under Node with tsx).
//
//   npx tsx benches/peers/stability_sim.mts --peer /tmp/stability-sim --workload mm1
//   npx tsx benches/peers/stability_sim.mts --peer /tmp/stability-sim --workload metastable-x100
//
// Workloads (the retrystorm side of each is in benches/peers/README.md):
//   mm1              Poisson 800/s → FIFO queue (unbounded, concurrency 1) → server exp 1 ms,
//                    concurrency 1; 1,250 s simulated (~1M requests), no retry, no timeout.
//   metastable-x100  the peer's own "metastable-retry" example (read from its src/examples) with
//                    the client rate, the queues' concurrency and the servers' concurrency ×100
//                    (--scale), so the same dynamics carry 100× the requests; 60 s as shipped.
//
// The loop is the worker's (src/engine/worker.ts, handleStart + step) without the pacing timer
// and without posting metric snapshots: the engine runs as fast as Node allows.

import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback !== undefined) return fallback;
  console.error(`missing --${name}; usage: npx tsx stability_sim.mts --peer PATH --workload mm1|metastable-x100 [--scale 100] [--end SECONDS] [--seed N]`);
  process.exit(2);
}

const peer = resolve(arg('peer'));
const workload = arg('workload');
const scale = Number(arg('scale', '100'));
const load = (rel: string) => import(pathToFileURL(`${peer}/src/${rel}`).href);

const { SimulationEngine } = await load('engine/simulation-engine.ts');
const { FailureInjector } = await load('engine/failure-injector.ts');
const { Client } = await load('engine/components/client.ts');
const { Server } = await load('engine/components/server.ts');
const { Queue } = await load('engine/components/queue.ts');
const { Cache } = await load('engine/components/cache.ts');
const { LoadBalancer } = await load('engine/components/load-balancer.ts');
const { Database } = await load('engine/components/database.ts');
const { Throttle } = await load('engine/components/throttle.ts');

type Def = { id: string; type: string; config: Record<string, unknown> & { type: string } };
type Arch = { components: Def[]; connections: { id: string; sourceId: string; targetId: string }[] };

function architecture(): { arch: Arch; config: Record<string, unknown> } {
  if (workload === 'mm1') {
    const end = Number(arg('end', '1250'));
    return {
      arch: {
        components: [
          { id: 'client', type: 'client', config: { type: 'client', trafficPattern: { type: 'open-loop', meanArrivalRate: 800 }, retryStrategy: { type: 'none' }, targetComponentId: 'queue', timeout: 1e12 } },
          { id: 'queue', type: 'queue', config: { type: 'queue', maxConcurrency: 1 } },
          { id: 'server', type: 'server', config: { type: 'server', serviceTimeDistribution: { type: 'exponential', mean: 0.001 }, concurrencyLimit: 1 } },
        ],
        connections: [
          { id: 'c1', sourceId: 'client', targetId: 'queue' },
          { id: 'c2', sourceId: 'queue', targetId: 'server' },
        ],
      },
      config: { schemaVersion: 1, name: 'mm1', endTime: end, metricsWindowSize: 1, seed: Number(arg('seed', '7')), failureScenarios: [] },
    };
  }
  if (workload === 'metastable-x100') {
    return { arch: scaledExample(), config: exampleConfig() };
  }
  console.error(`unknown --workload '${workload}': use mm1 or metastable-x100`);
  process.exit(2);
}

let example: { architecture: Arch; simulationConfig: Record<string, unknown> };
{
  const { EXAMPLES } = await load('examples/index.ts');
  example = EXAMPLES.find((e: { id: string }) => e.id === 'metastable-retry');
  if (!example) {
    console.error(`no 'metastable-retry' example in ${peer}/src/examples/index.ts`);
    process.exit(2);
  }
}

function scaledExample(): Arch {
  const arch: Arch = structuredClone(example.architecture);
  for (const c of arch.components) {
    const cfg = c.config as Record<string, any>;
    if (cfg.type === 'client') cfg.trafficPattern.meanArrivalRate *= scale;
    if (cfg.type === 'queue') cfg.maxConcurrency *= scale;
    if (cfg.type === 'server') cfg.concurrencyLimit *= scale;
  }
  return arch;
}

function exampleConfig(): Record<string, unknown> {
  const config = structuredClone(example.simulationConfig);
  const end = arg('end', '');
  if (end !== '') config.endTime = Number(end);
  return config;
}

function build(def: Def): any {
  const { type, ...cfg } = def.config;
  switch (type) {
    case 'client': return new Client(def.id, cfg);
    case 'server': return new Server(def.id, cfg);
    case 'queue': return new Queue(def.id, cfg);
    case 'cache': return new Cache(def.id, cfg);
    case 'load-balancer': return new LoadBalancer(def.id, cfg);
    case 'database': return new Database(def.id, cfg);
    case 'throttle': return new Throttle(def.id, cfg);
    default: throw new Error(`unknown component type ${type}`);
  }
}

const { arch, config } = architecture();
const started = process.hrtime.bigint();
const components = arch.components.map(build);
const engine = new SimulationEngine(components, arch.connections, config);
const injector = new FailureInjector();
engine.setFailureInjector(injector);
injector.scheduleFailures(config.failureScenarios, (e: unknown) => engine.scheduleEvent(e), () => engine.nextId());
const context = {
  currentTime: 0,
  scheduleEvent: (e: unknown) => engine.scheduleEvent(e),
  getComponent: (id: string) => components.find((c: { id: string }) => c.id === id),
  getDownstream: (id: string) => arch.connections.filter((c) => c.sourceId === id).map((c) => c.targetId),
  random: () => engine.getRng().random(),
  nextId: () => engine.nextId(),
  recordMetric: (id: string, name: string, value: number, time: number) => engine.getMetrics().record(id, name, value, time),
};
for (const c of components) {
  if (c instanceof Client) for (const e of c.generateInitialEvents(context)) engine.scheduleEvent(e);
}
let events = 0;
while (!engine.step()) events++;
const wall = Number(process.hrtime.bigint() - started) / 1e9;
const clients = components.filter((c: { type: string }) => c.type === 'client').map((c: any) => c.getMetrics());
const sum = (k: string) => clients.reduce((s: number, m: Record<string, number>) => s + (m[k] ?? 0), 0);
console.log(JSON.stringify({
  peer: 'stability-sim',
  workload,
  simulated_s: config.endTime,
  events,
  completed: sum('completedCount'),
  failed: sum('failedCount'),
  retried: sum('retriedCount'),
  timed_out: sum('timedOutCount'),
  wall_s: wall,
  events_per_s: events / wall,
  // Node reports the resident set at exit; /usr/bin/time -v gives the true peak (use that).
  rss_at_exit_bytes: process.memoryUsage().rss,
}));
