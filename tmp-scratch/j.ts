import { whereJsonFails } from '../trainer/rollout/formats/hermes';
for (const t of ['{"name": "convert", "arguments": {"value": 23.8, "fm", "to": "km"}}', '{"a": 1', '{"a": 1}}', '{"a" 1}', "{'a': 1}", '{"a": tru}']) { try { JSON.parse(t) } catch (e) { console.log(t, '->', whereJsonFails(t, e as Error)) } }
