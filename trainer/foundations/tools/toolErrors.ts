/** A tool is defined wrongly (name, description, schema, limits); the message names the tool and the field. */
export class ToolDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolDefinitionError';
  }
}

/** User code (a tool file, a config) could not be compiled or loaded; the message names the file. */
export class UserCodeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UserCodeError';
  }
}
