import * as esbuild from 'esbuild';
import Module from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UserCodeError } from '../../foundations/tools/toolErrors';

/**
 * Loads the user's TypeScript (tools, rewards, a training config) into the running trainer.
 *
 * The file is compiled at load time by esbuild — bundled (so its relative imports come along),
 * for Node, as CommonJS, with an inline source map — and evaluated as a CommonJS module. With
 * Node's source-map support switched on, a stack trace from the user's code points at the
 * user's `.ts` lines, not at the bundle.
 *
 * `import … from 'rollout-studio'` in user code must give the trainer's own module instance, not
 * a second copy of the library: otherwise `tool instanceof Tool` is false and the tool is
 * refused. So 'rollout-studio' stays external in the bundle (an esbuild plugin marks it), and the
 * module's `require` answers it with this trainer's public API object. Other packages
 * (`minisearch`, `zod`, the user's own dependencies) also stay external and are required from
 * the user's folder by Node as usual, so native modules and package singletons keep working.
 */

export const PACKAGE_NAME = 'rollout-studio';

/**
 * This trainer's public API object (trainer/index.ts), looked up when a user module asks for it.
 * Not a static import: index.ts re-exports this module, and a namespace imported during that
 * cycle can be a snapshot taken before index.ts finished (it is under CommonJS transforms).
 */
function publicApi(): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the cycle above: read when called, not at import
  return require('../../index');
}

const PACKAGE_IMPORT = /^rollout-studio(\/.*)?$/;

/** Marks `rollout-studio` (and any subpath, which is refused at run time with a clear message) external. */
export const rolloutStudioExternal: esbuild.Plugin = {
  name: 'rollout-studio-external',
  setup(build) {
    build.onResolve({ filter: PACKAGE_IMPORT }, (args) => ({ path: args.path, external: true }));
  },
};

/** esbuild's message as `file:line:column: text`, with the offending line when there is one. */
function formatMessage(message: esbuild.Message): string {
  const at = message.location;
  if (!at) return message.text;
  const where = `${path.resolve(at.file)}:${at.line}:${at.column + 1}`;
  return `${where}: ${message.text}${at.lineText ? `\n    ${at.lineText}` : ''}`;
}

/** The user file compiled to one CommonJS module with an inline source map. */
export async function compileUserModule(file: string): Promise<string> {
  const absolute = path.resolve(file);
  if (!fs.existsSync(absolute)) throw new UserCodeError(`${absolute}: file not found`);
  let result: esbuild.BuildResult & { outputFiles: esbuild.OutputFile[] };
  try {
    result = await esbuild.build({
      entryPoints: [absolute],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: `node${process.versions.node.split('.')[0]}`,
      sourcemap: 'inline',
      sourcesContent: true,
      // Not written: the name only places the source map's `sources` next to the user's files.
      outfile: `${absolute}.rollout-studio.cjs`,
      write: false,
      packages: 'external',
      plugins: [rolloutStudioExternal],
      logLevel: 'silent',
    });
  } catch (error) {
    const failure = error as esbuild.BuildFailure;
    if (Array.isArray(failure.errors) && failure.errors.length) {
      throw new UserCodeError(`${absolute} does not compile:\n${failure.errors.map(formatMessage).join('\n')}`, {
        cause: error,
      });
    }
    throw new UserCodeError(`${absolute}: esbuild failed (${(error as Error).message})`, { cause: error });
  }
  return result.outputFiles[0].text;
}

/**
 * Every user module this process loaded, kept alive for as long as the process runs. Node keeps
 * a CommonJS module's source map in a weak map keyed by its Module object: once nothing
 * references the Module (only its exports are used), a garbage collection drops the map, and
 * from then on stack traces from the user's code point at the bundle
 * (`config.ts.rollout-studio.cjs:57`) instead of the user's `.ts` line. A training runs long
 * enough for that to happen before its tools first throw. A process loads a handful of files
 * (a config and what it imports is one bundle), so keeping them costs little.
 */
const loadedModules: Module[] = [];

type InternalModule = Module & {
  _compile(code: string, filename: string): void;
  paths: string[];
};
type ModuleStatics = typeof Module & { _nodeModulePaths(dir: string): string[] };

/**
 * Compiles and evaluates `file`; returns its exports. Every call compiles afresh (an edited
 * tool is picked up on the next run). Errors name the file; a throw during evaluation keeps the
 * user's stack (source-mapped) in the message.
 */
export async function loadUserModule(file: string): Promise<Record<string, unknown>> {
  const absolute = path.resolve(file);
  return evaluateUserModule(absolute, await compileUserModule(absolute));
}

/**
 * Evaluates code `compileUserModule` made from `absolute` as that file's module; returns its
 * exports. The tool worker (toolWorker.ts) evaluates the very code the trainer loaded this way.
 */
export function evaluateUserModule(absolute: string, code: string): Record<string, unknown> {
  // Node maps stack traces through the inline source map only with this switched on.
  process.setSourceMapsEnabled(true);
  const filename = `${absolute}.rollout-studio.cjs`;
  const statics = Module as ModuleStatics;
  const mod = new Module(filename) as InternalModule;
  mod.filename = filename;
  mod.paths = statics._nodeModulePaths(path.dirname(absolute));
  const requireFromUserFolder = mod.require.bind(mod);
  // Node's `require` inside the module calls `mod.require`, so this is where 'rollout-studio' is answered.
  mod.require = ((id: string) => {
    if (id === PACKAGE_NAME) return publicApi();
    if (PACKAGE_IMPORT.test(id))
      throw new UserCodeError(`${absolute}: import from '${PACKAGE_NAME}' itself, not from '${id}'`);
    return requireFromUserFolder(id);
  }) as NodeJS.Require;
  loadedModules.push(mod);
  const exits = refuseExit(absolute);
  try {
    mod._compile(code, filename);
  } catch (error) {
    if (exits.called) throw exits.called;
    const detail = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
    throw new UserCodeError(`${absolute}: loading the module threw:\n${detail}`, { cause: error });
  } finally {
    exits.restore();
  }
  // Caught by the module itself: still refused, the module did not load as written.
  if (exits.called) throw exits.called;
  return mod.exports as Record<string, unknown>;
}

/**
 * While a module loads, `process.exit` throws instead of ending the process. A top-level
 * `process.exit(0)` in a config or tool module would otherwise end `train`, `run-tool`,
 * `eval-reward` or `serve-tools` with status 0 and nothing done — indistinguishable from success.
 */
function refuseExit(absolute: string): { called: UserCodeError | undefined; restore(): void } {
  const exit = process.exit;
  const state = {
    called: undefined as UserCodeError | undefined,
    restore: () => {
      process.exit = exit;
    },
  };
  process.exit = ((code?: number | string | null) => {
    state.called ??= new UserCodeError(
      `${absolute} called process.exit(${code ?? ''}) while loading; a config, tool or reward module must not end the process`,
    );
    throw state.called;
  }) as typeof process.exit;
  return state;
}
