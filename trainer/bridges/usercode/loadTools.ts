import * as path from 'node:path';
import { Tool } from '../../foundations/tools/tool';
import { UserCodeError } from '../../foundations/tools/toolErrors';
import { loadUserModule } from './loadUserModule';

/**
 * The tools a user file exports: `export default [..]`, `export const tools = [..]`, or else
 * every exported `Tool` instance. A class is not instantiated for the user (its constructor may
 * need arguments): export an instance.
 */
export async function loadTools(file: string): Promise<Tool[]> {
  const exports = await loadUserModule(file);
  const absolute = path.resolve(file);
  const listed = exports['default'] ?? exports['tools'];
  if (listed !== undefined) {
    const which = exports['default'] !== undefined ? 'the default export' : 'the export "tools"';
    const list = Array.isArray(listed) ? listed : [listed];
    list.forEach((value, i) => {
      if (!(value instanceof Tool)) {
        const seen =
          typeof value === 'function' && value.prototype instanceof Tool
            ? `the class ${value.name} (export an instance: new ${value.name}(…))`
            : describe(value);
        throw new UserCodeError(`${absolute}: ${which}${Array.isArray(listed) ? `[${i}]` : ''} is ${seen}, not a Tool`);
      }
    });
    return list as Tool[];
  }
  const found = Object.values(exports).filter((v): v is Tool => v instanceof Tool);
  if (found.length === 0) {
    const classes = Object.entries(exports).filter(
      ([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Tool,
    );
    const hint = classes.length
      ? ` (it exports the class${classes.length > 1 ? 'es' : ''} ${classes.map(([k]) => k).join(', ')}; export instances)`
      : '';
    throw new UserCodeError(
      `${absolute}: exports no tools${hint}; export an array of tools as "tools" or default, or export Tool instances`,
    );
  }
  return found;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'Object'}`;
  return `a ${typeof value}`;
}
