import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CheckpointError,
  CheckpointReader,
  float32Bits,
  planShards,
  SafetensorsFile,
  writeSafetensors,
  writeShardedSafetensors,
  type WritableTensor,
} from '#trainer/foundations/models';

let root: string;
let counter = 0;
const fresh = (name = 'x') => {
  const dir = path.join(root, `t${counter++}`);
  fs.mkdirSync(dir);
  return path.join(dir, name);
};

/** A safetensors file from a header (object or literal JSON text) and data bytes, per the format spec. */
function rawFile(header: object | string, data: number[] | Uint8Array, headerLength?: number): string {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(headerLength ?? json.length));
  const file = fresh('model.safetensors');
  fs.writeFileSync(file, Buffer.concat([length, json, Buffer.from(data)]));
  return file;
}

function readAll(file: string, name: string): Float32Array {
  const st = SafetensorsFile.open(file);
  try {
    return st.read(name);
  } finally {
    st.close();
  }
}

function bits(values: Float32Array): number[] {
  return Array.from(values, float32Bits);
}

function sameBytes(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function openError(file: string): string {
  try {
    SafetensorsFile.open(file).close();
  } catch (error) {
    assert.ok(error instanceof CheckpointError, String(error));
    assert.ok(error.message.startsWith(file + ': '), `message should start with the file: ${error.message}`);
    return error.message;
  }
  assert.fail('expected open to fail');
}

describe('safetensors', () => {
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-safetensors-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('reads a file laid out by hand from the format specification', () => {
    // Built byte by byte, not by our writer: header JSON (spaces allowed as padding), then
    // little-endian data. F16 [1, -2, 65504, 2^-24] = 3c00 c000 7bff 0001; BF16 [1, -0.5,
    // 3.140625] = 3f80 bf00 4049; F32 3.25 = 40500000, deliberately at an unaligned offset.
    const header =
      '{"__metadata__":{"format":"pt"},' +
      '"w.f16":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},' +
      '"w.bf16":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},' +
      '"w.f32":{"dtype":"F32","shape":[],"data_offsets":[14,18]},' +
      '"ids":{"dtype":"I64","shape":[1],"data_offsets":[18,26]}}   ';
    const data = [
      0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00, 0x80, 0x3f, 0x00, 0xbf, 0x49, 0x40, 0x00, 0x00, 0x50, 0x40, 7, 0,
      0, 0, 0, 0, 0, 0,
    ];
    const file = rawFile(header, data);
    const st = SafetensorsFile.open(file);
    try {
      assert.deepEqual(st.header.metadata, { format: 'pt' });
      assert.deepEqual(st.info('w.f16').shape, [2, 2]);
      assert.deepEqual(Array.from(st.read('w.f16')), [1, -2, 65504, 2 ** -24]);
      assert.deepEqual(Array.from(st.read('w.bf16')), [1, -0.5, 3.140625]);
      assert.deepEqual(Array.from(st.read('w.f32')), [3.25]);
      assert.deepEqual(Array.from(st.readBytes('ids')), [7, 0, 0, 0, 0, 0, 0, 0]);
      assert.throws(
        () => st.read('ids'),
        new RegExp(
          `^CheckpointError: ${file}: tensor "ids" has dtype I64, which is not supported; supported: F32, F16, BF16$`,
        ),
      );
      assert.throws(() => st.read('nope'), /no tensor "nope"/);
    } finally {
      st.close();
    }
  });

  it('writes the layout of the reference implementation: sorted names, space-padded header, format "pt"', () => {
    const file = fresh('w.safetensors');
    writeSafetensors(
      file,
      [
        { name: 'b', shape: [2], data: new Float32Array([1, 2]) },
        { name: 'a', shape: [1], data: new Float32Array([-1]) },
      ],
      { dtype: 'bfloat16', metadata: { step: '3' } },
    );
    const json =
      '{"__metadata__":{"step":"3","format":"pt"},"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}';
    const padded = json + ' '.repeat((8 - (json.length % 8)) % 8);
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(padded.length));
    // -1 = bf80, 1 = 3f80, 2 = 4000, little-endian.
    const expected = Buffer.concat([length, Buffer.from(padded), Buffer.from([0x80, 0xbf, 0x80, 0x3f, 0x00, 0x40])]);
    assert.deepEqual(fs.readFileSync(file), expected);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['w.safetensors']); // no temporary left behind
  });

  it('round-trips float32 bit for bit, special values included, across write chunks', () => {
    const special = [0, -0, 1, -1, Infinity, -Infinity, NaN, 1e-45, 3.4028234663852886e38, Math.PI];
    const big = new Float32Array(1_500_000); // more than one write chunk
    for (let i = 0; i < big.length; i++) big[i] = Math.sin(i) * 1000;
    const file = fresh('rt.safetensors');
    writeSafetensors(file, [
      { name: 'special', shape: [special.length], data: new Float32Array(special) },
      { name: 'big', shape: [1500, 1000], data: () => big },
      { name: 'empty', shape: [0, 4], data: new Float32Array(0) },
    ]);
    assert.deepEqual(bits(readAll(file, 'special')), bits(new Float32Array(special)));
    assert.ok(sameBytes(readAll(file, 'big'), big));
    assert.equal(readAll(file, 'empty').length, 0);
  });

  for (const dtype of ['bfloat16', 'float16'] as const) {
    it(`stores ${dtype} rounded to nearest even, and re-saving what it reads is bit-identical`, () => {
      const values = new Float32Array(5_000_000); // more than one 8 MB read chunk of 16-bit data
      for (let i = 0; i < values.length; i++) values[i] = ((i % 7919) - 3959) * 0.0123;
      const first = fresh('a.safetensors');
      writeSafetensors(first, [{ name: 'w', shape: [values.length], data: values }], { dtype });
      const read = readAll(first, 'w');
      // Spot-check the rounding against the scalar conversion.
      const tag = dtype === 'bfloat16' ? 'BF16' : 'F16';
      const st = SafetensorsFile.open(first);
      assert.equal(st.info('w').dtype, tag);
      st.close();
      for (const i of [0, 1, 12345, 4_999_999]) {
        const scale = dtype === 'bfloat16' ? 2 ** -8 : 2 ** -11;
        assert.ok(Math.abs(read[i]! - values[i]!) <= Math.abs(values[i]!) * scale, `${values[i]} -> ${read[i]}`);
      }
      const second = fresh('b.safetensors');
      writeSafetensors(second, [{ name: 'w', shape: [values.length], data: read }], { dtype });
      assert.ok(fs.readFileSync(first).equals(fs.readFileSync(second)));
    });
  }

  it('refuses tensors whose data does not match their shape, and duplicate names', () => {
    const file = fresh('bad.safetensors');
    assert.throws(
      () => writeSafetensors(file, [{ name: 'w', shape: [2, 3], data: new Float32Array(5) }]),
      /tensor "w" has shape \[2, 3\] \(6 values\) but its data is 5 values/,
    );
    assert.ok(!fs.existsSync(file));
    assert.deepEqual(fs.readdirSync(path.dirname(file)), []);
    const same = { name: 'w', shape: [1], data: new Float32Array(1) };
    assert.throws(() => writeSafetensors(file, [same, same]), /tensor "w" is given twice/);
  });

  describe('rejects damaged files with the file and the tensor named', () => {
    const entry = (dtype: string, shape: number[], offsets: [number, number]) => ({
      dtype,
      shape,
      data_offsets: offsets,
    });

    it('a missing file', () => {
      const file = path.join(root, 'missing.safetensors');
      assert.match(openError(file), /missing\.safetensors: file not found$/);
    });

    it('a file truncated inside the data', () => {
      const file = rawFile({ a: entry('F32', [2], [0, 8]), b: entry('F32', [3], [8, 20]) }, new Uint8Array(20));
      fs.truncateSync(file, fs.statSync(file).size - 5);
      assert.match(
        openError(file),
        /truncated: tensor "b" ends at data byte 20 but the file holds only 15 bytes of data/,
      );
    });

    it('a file truncated inside the header, or shorter than the length field', () => {
      const file = rawFile({ a: entry('F32', [2], [0, 8]) }, new Uint8Array(8));
      fs.truncateSync(file, 20);
      assert.match(openError(file), /the header length field says \d+ bytes but only 12 follow it/);
      fs.truncateSync(file, 5);
      assert.match(openError(file), /truncated: 5 bytes, shorter than the 8-byte header length/);
    });

    it('a header length that cannot be right', () => {
      const file = rawFile({ a: entry('F32', [1], [0, 4]) }, new Uint8Array(4), 2 ** 40);
      assert.match(openError(file), /corrupted header: its length field says 1099511627776 bytes/);
    });

    it('a header that is not JSON, or not an object of tensors', () => {
      assert.match(openError(rawFile('{"a": {"dtype": "F32",', [])), /corrupted header: not valid JSON/);
      assert.match(openError(rawFile('[1, 2]', [])), /corrupted header: expected a JSON object of tensors/);
      assert.match(
        openError(rawFile({ w: { dtype: 'F32', shape: [1] } }, new Uint8Array(4))),
        /tensor "w": data_offsets: Invalid input/,
      );
    });

    it('a dtype the format does not define', () => {
      assert.match(
        openError(rawFile({ w: entry('Q4_K', [2], [0, 1]) }, new Uint8Array(1))),
        /tensor "w" has dtype "Q4_K", which the safetensors format does not define/,
      );
    });

    it('offsets that disagree with the shape', () => {
      assert.match(
        openError(rawFile({ w: entry('F32', [3], [0, 8]) }, new Uint8Array(8))),
        /tensor "w" has data_offsets \[0, 8\] \(8 bytes\) but shape \[3\] of F32 needs 12 bytes/,
      );
    });

    it('overlapping tensors, a gap, and bytes nobody owns', () => {
      assert.match(
        openError(rawFile({ a: entry('F32', [2], [0, 8]), b: entry('F32', [2], [4, 12]) }, new Uint8Array(12))),
        /tensor "b" .*overlaps tensor "a"/,
      );
      assert.match(
        openError(rawFile({ a: entry('F32', [1], [0, 4]), b: entry('F32', [1], [8, 12]) }, new Uint8Array(12))),
        /4 bytes before tensor "b" belong to no tensor/,
      );
      assert.match(
        openError(rawFile({ a: entry('F32', [1], [0, 4]) }, new Uint8Array(9))),
        /the header accounts for 4 bytes of data but the file holds 9/,
      );
    });
  });

  describe('sharded checkpoints', () => {
    const tensor = (name: string, n: number, start: number): WritableTensor => ({
      name,
      shape: [n],
      data: Float32Array.from({ length: n }, (_, i) => start + i),
    });

    it('groups tensors into shards like huggingface_hub: in order, oversized tensors alone', () => {
      const sizes = [
        { name: 'a', bytes: 100 },
        { name: 'b', bytes: 100 },
        { name: 'c', bytes: 100 },
        { name: 'd', bytes: 300 },
        { name: 'e', bytes: 50 },
      ];
      assert.deepEqual(planShards(sizes, 250), [['a', 'b'], ['d'], ['c', 'e']]);
      assert.deepEqual(planShards(sizes, 10_000), [['a', 'b', 'c', 'd', 'e']]);
    });

    it('writes model-0000k-of-0000n shards with the transformers index, and reads them back', () => {
      const dir = path.dirname(fresh());
      const tensors = [
        tensor('model.embed_tokens.weight', 40, 0),
        tensor('model.norm.weight', 10, 100),
        tensor('lm_head.weight', 40, 200),
        tensor('model.layers.0.mlp.up_proj.weight', 30, 300),
      ];
      const result = writeShardedSafetensors(dir, tensors, { maxShardBytes: 200 });
      assert.deepEqual(result.files, [
        'model-00001-of-00003.safetensors',
        'model-00002-of-00003.safetensors',
        'model-00003-of-00003.safetensors',
      ]);
      assert.equal(result.index, 'model.safetensors.index.json');
      const index = fs.readFileSync(path.join(dir, 'model.safetensors.index.json'), 'utf8');
      assert.equal(
        index,
        `{
  "metadata": {
    "total_size": 480
  },
  "weight_map": {
    "lm_head.weight": "model-00002-of-00003.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00003.safetensors",
    "model.layers.0.mlp.up_proj.weight": "model-00003-of-00003.safetensors",
    "model.norm.weight": "model-00001-of-00003.safetensors"
  }
}
`,
      );
      const reader = CheckpointReader.open(dir);
      try {
        assert.deepEqual(reader.names(), [
          'lm_head.weight',
          'model.embed_tokens.weight',
          'model.layers.0.mlp.up_proj.weight',
          'model.norm.weight',
        ]);
        for (const t of tensors) assert.deepEqual(reader.read(t.name), t.data);
        assert.equal(reader.info('lm_head.weight').file, path.join(dir, 'model-00002-of-00003.safetensors'));
        assert.throws(
          () => reader.read('model.norm.weight', [12]),
          new RegExp(
            `${dir}/model-00001-of-00003.safetensors: tensor "model.norm.weight" has shape \\[10\\] but the model config needs \\[12\\]`,
          ),
        );
      } finally {
        reader.close();
      }
    });

    it('replaces an earlier save in the same folder without leaving its files behind', () => {
      const dir = path.dirname(fresh());
      writeShardedSafetensors(dir, [tensor('a', 40, 0), tensor('b', 40, 0), tensor('c', 40, 0)], {
        maxShardBytes: 200,
      });
      fs.writeFileSync(path.join(dir, 'config.json'), '{}');
      const result = writeShardedSafetensors(dir, [tensor('a', 4, 1)]);
      assert.deepEqual(result.files, ['model.safetensors']);
      assert.deepEqual(fs.readdirSync(dir).sort(), ['config.json', 'model.safetensors']);
      const reader = CheckpointReader.open(dir);
      assert.deepEqual(Array.from(reader.read('a')), [1, 2, 3, 4]);
      reader.close();
    });

    it('names the index, the shard and the tensor when they disagree', () => {
      const dir = path.dirname(fresh());
      writeShardedSafetensors(dir, [tensor('a', 40, 0), tensor('b', 40, 0), tensor('c', 40, 0)], {
        maxShardBytes: 200,
      });
      const indexFile = path.join(dir, 'model.safetensors.index.json');
      const index = JSON.parse(fs.readFileSync(indexFile, 'utf8'));

      fs.writeFileSync(
        indexFile,
        JSON.stringify({ ...index, weight_map: { ...index.weight_map, d: 'model-00009-of-00009.safetensors' } }),
      );
      assert.throws(
        () => CheckpointReader.open(dir),
        new RegExp(`${dir}/model-00009-of-00009.safetensors: file not found \\(the index lists it for tensor "d"`),
      );

      assert.equal(index.weight_map.b, 'model-00002-of-00003.safetensors');
      const swapped = { ...index.weight_map, a: index.weight_map.b, b: index.weight_map.a };
      fs.writeFileSync(indexFile, JSON.stringify({ ...index, weight_map: swapped }));
      assert.throws(
        () => CheckpointReader.open(dir),
        /model-00002-of-00003\.safetensors: holds tensor "b", which .*index\.json places in model-00001-of-00003\.safetensors \(the index is out of date\)/,
      );

      fs.writeFileSync(
        indexFile,
        JSON.stringify({ ...index, weight_map: { ...index.weight_map, z: 'model-00002-of-00003.safetensors' } }),
      );
      assert.throws(
        () => CheckpointReader.open(dir),
        /model-00002-of-00003\.safetensors: has no tensor "z", which .*index\.json places there/,
      );

      fs.writeFileSync(indexFile, '{"weight_map": 3}');
      assert.throws(() => CheckpointReader.open(dir), /model\.safetensors\.index\.json: weight_map: Invalid input/);
    });

    it('explains a folder without safetensors weights', () => {
      const dir = path.dirname(fresh());
      fs.writeFileSync(path.join(dir, 'pytorch_model.bin'), 'x');
      assert.throws(
        () => CheckpointReader.open(dir),
        /no model\.safetensors or model\.safetensors\.index\.json \(found pytorch_model\.bin: PyTorch pickles are not read; convert them to safetensors/,
      );
      assert.throws(() => CheckpointReader.open(path.join(root, 'nowhere')), /nowhere: model folder not found/);
    });
  });
});
