import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { repoRoot } from './paths';

/**
 * Real VS Code for tests: code-server (Code-OSS 1.100.3) started in a throwaway profile.
 * The binary comes from test/setup/ensure-deps.sh, which installs it into a cache folder
 * outside the clone; CODE_SERVER_BIN overrides it.
 */
export function codeServerBinary(): string {
  if (process.env.CODE_SERVER_BIN) return process.env.CODE_SERVER_BIN;
  const out = execFileSync('bash', [path.join(repoRoot, 'test/setup/ensure-deps.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const bin = out.trim().split('\n').pop()!;
  if (!fs.existsSync(bin)) throw new Error(`ensure-deps.sh reported ${bin}, which does not exist`);
  return bin;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface CodeServerProfile {
  /** Root of the throwaway profile: HOME, XDG dirs, user data and extensions live under it. */
  dir: string;
  userDataDir: string;
  extensionsDir: string;
  env: NodeJS.ProcessEnv;
}

/** A fresh, empty profile with settings that keep the workbench quiet and offline. */
export function createProfile(dir: string, settings: Record<string, unknown> = {}): CodeServerProfile {
  fs.rmSync(dir, { recursive: true, force: true });
  const home = path.join(dir, 'home');
  const userDataDir = path.join(dir, 'user-data');
  const extensionsDir = path.join(dir, 'extensions');
  for (const d of [home, path.join(userDataDir, 'User'), extensionsDir]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(
    path.join(userDataDir, 'User', 'settings.json'),
    JSON.stringify(
      {
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'security.workspace.trust.enabled': false,
        'update.mode': 'none',
        'git.openRepositoryInParentFolders': 'never',
        ...settings,
      },
      null,
      2,
    ),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  return { dir, userDataDir, extensionsDir, env };
}

/** `code-server --install-extension x.vsix` into the profile. */
export function installExtension(bin: string, profile: CodeServerProfile, vsix: string): void {
  execFileSync(
    bin,
    ['--user-data-dir', profile.userDataDir, '--extensions-dir', profile.extensionsDir, '--install-extension', vsix],
    {
      env: profile.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

export interface RunningCodeServer {
  port: number;
  url: string;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Start code-server on a free port in its own process group (extension hosts outlive the
 * browser, so stopping kills the whole group) and wait until /healthz answers.
 */
export async function startCodeServer(
  bin: string,
  profile: CodeServerProfile,
  folder: string,
  extraEnv: NodeJS.ProcessEnv = {},
  /** Keep Workspace Trust on (the profile's settings decide the rest), for tests of Restricted Mode. */
  options: { workspaceTrust?: boolean } = {},
): Promise<RunningCodeServer> {
  const port = await freePort();
  const logFile = path.join(profile.dir, 'code-server.log');
  const log = fs.openSync(logFile, 'w');
  const args = [
    '--user-data-dir',
    profile.userDataDir,
    '--extensions-dir',
    profile.extensionsDir,
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    ...(options.workspaceTrust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    folder,
  ];
  const child: ChildProcess = spawn(bin, args, {
    env: { ...profile.env, ...extraEnv },
    stdio: ['ignore', log, log],
    detached: true,
  });
  fs.closeSync(log);
  let exited = false;
  child.on('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited)
      throw new Error(
        `code-server exited during start-up; see ${logFile}:\n${fs.readFileSync(logFile, 'utf8').slice(-2000)}`,
      );
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`code-server did not answer /healthz within 60 s; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    port,
    url,
    logFile,
    async stop() {
      if (exited || child.pid === undefined) return;
      const group = -child.pid;
      try {
        process.kill(group, 'SIGTERM');
      } catch {
        return;
      }
      const until = Date.now() + 5000;
      while (Date.now() < until) {
        try {
          process.kill(group, 0);
        } catch {
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      try {
        process.kill(group, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}
