import { z } from 'zod';

// Import this module first in every webview app, before anything that defines a schema.
// zod compiles object schemas with `new Function` unless told not to, and decides when each
// schema is created. The panels' CSP grants no 'unsafe-eval', so the attempt is refused and
// reported as a CSP violation; zod's interpreter is fast enough for our messages (5,000 table
// rows validate in about 20 ms).
z.config({ jitless: true });
