/**
 * Name rules shared by the trainer and the editor, in a module with no dependencies (the code
 * lens parser bundle imports it without pulling zod in).
 */

/** How the policy calls a tool: the Tool API's name rule (also what New Tool accepts). */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const TOOL_NAME_RULE = '1 to 64 letters, digits, "_" or "-"';

/**
 * A value inside a user module's exports, written the way it is reached in code:
 * `search`, `tools[0]`, `rewards.outcome[0]`.
 */
export const EXPORT_PATH_PATTERN = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[\d+\])*$/;
