/** A command-line mistake: printed with the usage text, exit code 2, no stack trace. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
