import { Random } from '../../../foundations/models/random';

/**
 * Which dataset rows each step trains on: passes over the data, each in a fresh order drawn
 * from the seed and the pass number alone — so a resumed run, given the saved position, takes
 * exactly the rows the uninterrupted run would have.
 */
export class DataCursor {
  private order: number[];

  constructor(
    private readonly size: number,
    private readonly seed: number,
    public epoch = 0,
    public position = 0,
  ) {
    if (size === 0) throw new Error('the training dataset is empty');
    this.order = this.orderFor(epoch);
  }

  private orderFor(epoch: number): number[] {
    return Random.fromSeed(this.seed * 7919 + epoch).shuffle(Array.from({ length: this.size }, (_, i) => i));
  }

  /** The next `count` row indices, wrapping into a new pass when the current one runs out. */
  take(count: number): number[] {
    const out: number[] = [];
    while (out.length < count) {
      if (this.position >= this.size) {
        this.epoch++;
        this.position = 0;
        this.order = this.orderFor(this.epoch);
      }
      out.push(this.order[this.position++]);
    }
    return out;
  }
}
