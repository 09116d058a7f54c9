import { execFileSync } from 'node:child_process';

/** A host of a lab: a network namespace with one address on the lab's bridge. */
export interface LabHost {
  /** Its name in the lab (e.g. `etcd`, `pserver-3`). */
  readonly name: string;
  /** Its network namespace. */
  readonly namespace: string;
  /** Its address on the bridge; it reaches every other host and the machine through it. */
  readonly address: string;
}

/** What a lab needs: root, iproute2's `ip` and `iptables`. Tests never skip. */
export const networkLabHint =
  'network faults need root, iproute2 (`ip`) and iptables: run the tests as root ' +
  "(CI does) with 'apt-get install -y iproute2 iptables'";

const prefix = 'psl';

/**
 * Hosts of their own on one machine, and network faults between them. Each host is a network
 * namespace joined to the lab's bridge by a veth pair, with one address of the lab's /24; the
 * machine's own namespace gets only the bridge and the subnet's first address, so the test process
 * reaches every host. Faults are iptables rules inside the hosts' namespaces — never in the
 * machine's — so they touch no traffic but the lab's, and `heal` flushes them. Nothing routes out
 * of the subnet. `destroy` removes every namespace, link and rule the lab made; a lab left by a killed test run is removed by the next
 * one (its names carry the pid of the process that made it).
 */
export class NetworkLab {
  private readonly hosts = new Map<string, LabHost>();
  /** The machine's ends of the hosts' veth pairs. */
  private readonly veths: string[] = [];
  /** Hosts whose link has a rate limit. */
  private readonly slowed = new Set<LabHost>();
  /** Ports sent through a proxy (`throughProxy`): hosts made later are sent there too. */
  private readonly proxied: { host: LabHost; port: number; proxy: string }[] = [];
  private destroyed = false;

  private constructor(
    /** The bridge's name, `psl<pid><letter>`; its hosts' names begin with it. */
    readonly bridge: string,
    /** The subnet's first three octets, e.g. `10.213.7`. */
    readonly subnet: string,
  ) {}

  /** Makes the bridge (removing labs of processes that no longer run first). */
  static create(): NetworkLab {
    if (process.getuid?.() !== 0) throw new Error(`not root: ${networkLabHint}`);
    for (const tool of ['ip', 'iptables'])
      try {
        execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
      } catch {
        throw new Error(`no ${tool} on PATH: ${networkLabHint}`);
      }
    removeLabsOfDeadProcesses();
    const lab = new NetworkLab(freeBridgeName(), freeSubnet());
    ip('link', 'add', lab.bridge, 'type', 'bridge');
    labs.add(lab);
    ip('addr', 'add', `${lab.subnet}.1/24`, 'dev', lab.bridge);
    ip('link', 'set', lab.bridge, 'up');
    return lab;
  }

  /** The host `name`, made on first use (a namespace, a veth pair, the next address). */
  host(name: string): LabHost {
    const known = this.hosts.get(name);
    if (known) return known;
    const n = this.hosts.size + 2;
    if (n > 254) throw new Error(`a lab holds at most 253 hosts (asked for ${name})`);
    const host: LabHost = {
      name,
      namespace: `${this.bridge}-${n}`,
      address: `${this.subnet}.${n}`,
    };
    const outside = `${this.bridge}v${n}`;
    ip('netns', 'add', host.namespace);
    this.hosts.set(name, host);
    ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.namespace);
    this.veths.push(outside);
    ip('link', 'set', outside, 'master', this.bridge, 'up');
    ip('-n', host.namespace, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0');
    ip('-n', host.namespace, 'link', 'set', 'eth0', 'up');
    ip('-n', host.namespace, 'link', 'set', 'lo', 'up');
    for (const route of this.proxied) viaProxy(host, route);
    return host;
  }

  /** `command args…` as run on `host`: `ip netns exec` execs it, so the pid is the command's. */
  command(host: LabHost, command: string, args: string[]): [string, string[]] {
    return ['ip', ['netns', 'exec', host.namespace, command, ...args]];
  }

  /**
   * Cuts `a` and `b` off from each other, both ways: their packets to each other are dropped (a
   * black hole: a connect times out, an open connection goes silent), or refused with a reset.
   */
  partition(a: string, b: string, how: 'drop' | 'reset' = 'drop'): void {
    const [hostA, hostB] = [this.known(a), this.known(b)];
    this.block(hostA, hostB.address, how);
    this.block(hostB, hostA.address, how);
  }

  /**
   * Drops what `from` sends to `to`, and only that: `to` still reaches `from`, but no connection
   * between them gets far (a TCP peer that hears and is not heard, as behind a broken route).
   */
  oneWay(from: string, to: string): void {
    appendRule(this.known(from), 'OUTPUT', '-d', this.known(to).address, '-j', 'DROP');
  }

  /** Partitions every host of `sideA` from every host of `sideB` (`partition` of each pair). */
  split(sideA: string[], sideB: string[], how: 'drop' | 'reset' = 'drop'): void {
    for (const a of sideA) for (const b of sideB) this.partition(a, b, how);
  }

  /** The names of the lab's hosts, in the order they were made. */
  get hostNames(): string[] {
    return [...this.hosts.keys()];
  }

  /** Drops every packet of `name` but its loopback's: it reaches no one, and no one reaches it. */
  isolate(name: string): void {
    const host = this.known(name);
    appendRule(host, 'INPUT', '!', '-i', 'lo', '-j', 'DROP');
    appendRule(host, 'OUTPUT', '!', '-o', 'lo', '-j', 'DROP');
  }

  /**
   * Drops `fraction` of the packets `name` sends and of those it receives (each at random, apart):
   * a lossy link to everyone. TCP retransmits what is lost; nothing is cut.
   */
  lossy(name: string, fraction: number): void {
    if (!(fraction > 0 && fraction < 1))
      throw new Error(`lossy: fraction ${fraction} not in (0, 1)`);
    const host = this.known(name);
    const drop = ['-m', 'statistic', '--mode', 'random', '--probability', String(fraction)];
    appendRule(host, 'INPUT', '!', '-i', 'lo', ...drop, '-j', 'DROP');
    appendRule(host, 'OUTPUT', '!', '-o', 'lo', ...drop, '-j', 'DROP');
  }

  /** Limits what `name` sends to `bitsPerSecond` (a token bucket on its link; queued, not dropped). */
  slow(name: string, bitsPerSecond: number): void {
    const host = this.known(name);
    const rate = ['rate', `${Math.round(bitsPerSecond)}bit`, 'burst', '32kbit', 'latency', '1s'];
    inHost(host, 'tc', 'qdisc', 'add', 'dev', 'eth0', 'root', 'tbf', ...rate);
    this.slowed.add(host);
  }

  /**
   * Sends every connection to `name`'s `port` through `proxy` (`address:port`, e.g. a FaultProxy
   * listening on the bridge's address): every other host's new connects go to the proxy instead,
   * also those of hosts made before the heal (the proxy itself, on the machine, still reaches
   * `name`), and connections already open are reset, so that their clients connect again,
   * through it.
   */
  throughProxy(name: string, port: number, proxy: string): void {
    const host = this.known(name);
    const route = { host, port, proxy };
    this.proxied.push(route);
    for (const other of this.hosts.values()) if (other !== host) viaProxy(other, route);
    const notProxied = ['-p', 'tcp', '--dport', String(port), '!', '-s', `${this.subnet}.1`];
    const notReset = ['!', '--tcp-flags', 'RST', 'RST'];
    const reset = ['-j', 'REJECT', '--reject-with', 'tcp-reset'];
    appendRule(host, 'INPUT', ...notProxied, ...notReset, ...reset);
  }

  /** Removes every fault: each host's rules flushed, its link's rate limit removed. */
  heal(): void {
    for (const host of this.hosts.values()) {
      inHost(host, 'iptables', '-w', '-F');
      inHost(host, 'iptables', '-w', '-t', 'nat', '-F');
    }
    for (const host of this.slowed) inHost(host, 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root');
    this.slowed.clear();
    this.proxied.length = 0;
  }

  /** Removes every namespace (with its veth end and rules) and the bridge. Idempotent. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    labs.delete(this);
    // A namespace's links go some time after the namespace: the veth pairs are deleted at once, so
    // that a lab made next by this process can take the same names.
    for (const link of this.veths) quietly(() => ip('link', 'del', link));
    for (const host of this.hosts.values()) quietly(() => ip('netns', 'del', host.namespace));
    quietly(() => ip('link', 'del', this.bridge));
  }

  private known(name: string): LabHost {
    const host = this.hosts.get(name);
    if (!host) throw new Error(`no host ${name} in the lab (hosts: ${[...this.hosts.keys()]})`);
    return host;
  }

  /**
   * `host` drops what comes from and goes to `peer`; or answers every TCP packet from it with a
   * reset but resets themselves (the peer, doing the same, lets this host's resets through): each
   * side sees its connects refused and its open connections reset.
   */
  private block(host: LabHost, peer: string, how: 'drop' | 'reset'): void {
    if (how === 'reset') {
      const notReset = ['-p', 'tcp', '!', '--tcp-flags', 'RST', 'RST'];
      const reject = ['-j', 'REJECT', '--reject-with', 'tcp-reset'];
      appendRule(host, 'INPUT', ...notReset, '-s', peer, ...reject);
      return;
    }
    appendRule(host, 'INPUT', '-s', peer, '-j', 'DROP');
    appendRule(host, 'OUTPUT', '-d', peer, '-j', 'DROP');
  }
}

/** Labs of this process, removed when it exits however the test ended. */
const labs = new Set<NetworkLab>();
process.on('exit', () => {
  for (const lab of labs) lab.destroy();
});

function ip(...args: string[]): string {
  return run('ip', args);
}

/** Runs a command in `host`'s namespace. */
function inHost(host: LabHost, command: string, ...args: string[]): void {
  run('ip', ['netns', 'exec', host.namespace, command, ...args]);
}

/** `host`'s new connects to `route.host`'s `route.port` go to `route.proxy` instead. */
function viaProxy(host: LabHost, route: { host: LabHost; port: number; proxy: string }): void {
  const to = ['-p', 'tcp', '-d', route.host.address, '--dport', String(route.port)];
  appendRule(host, '-t', 'nat', 'OUTPUT', ...to, '-j', 'DNAT', '--to-destination', route.proxy);
}

/**
 * Appends an iptables rule in `host`'s namespace (`-w`: waits for the xtables lock); a rule that
 * begins with `-t <table>` goes to that table.
 */
function appendRule(host: LabHost, ...rule: string[]): void {
  const table = rule[0] === '-t' ? rule.splice(0, 2) : [];
  inHost(host, 'iptables', '-w', ...table, '-A', ...rule);
}

function run(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(`${command} ${args.join(' ')} failed: ${stderr || String(err)}`, {
      cause: err,
    });
  }
}

function quietly(action: () => void): void {
  try {
    action();
  } catch {
    // Already gone.
  }
}

/**
 * `psl<pid><letter>`: the first letter no lab of this process uses now. Names of links are at
 * most 15 bytes: a host's veth end, `psl<pid><letter>v<n>`, is 15 with a 7-digit pid and n = 254.
 */
function freeBridgeName(): string {
  const taken = new Set([...labs].map((lab) => lab.bridge));
  for (const letter of 'abcdefghijklmnopqrstuvwxyz') {
    const name = `${prefix}${process.pid}${letter}`;
    if (!taken.has(name)) return name;
  }
  throw new Error('26 network labs at once in one process');
}

/** A 10.213.x.0/24 that no interface of the machine has an address in. */
function freeSubnet(): string {
  const used = ip('-o', '-4', 'addr', 'show');
  for (let i = 0; i < 250; i++) {
    const subnet = `10.213.${(process.pid + i) % 250}`;
    if (!used.includes(` ${subnet}.`)) return subnet;
  }
  throw new Error('every 10.213.x.0/24 is in use on this machine');
}

/** Removes the namespaces and links of labs whose process is gone (a test run killed). */
function removeLabsOfDeadProcesses(): void {
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
  const owner = (name: string): number | undefined => {
    const match = new RegExp(`^${prefix}(\\d+)`).exec(name);
    return match ? Number(match[1]) : undefined;
  };
  const namespaces = ip('netns', 'list')
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter(Boolean);
  for (const namespace of namespaces) {
    const pid = owner(namespace);
    if (pid !== undefined && !alive(pid)) quietly(() => ip('netns', 'del', namespace));
  }
  // Bridges, and veth ends whose namespace was deleted before them (the kernel may keep a
  // deleted namespace, and so the pair, a while).
  const links = ip('-o', 'link', 'show')
    .split('\n')
    .map((line) => line.split(': ')[1]?.split('@')[0])
    .filter((name): name is string => name !== undefined);
  for (const link of links) {
    const pid = owner(link);
    if (pid !== undefined && !alive(pid)) quietly(() => ip('link', 'del', link));
  }
}
