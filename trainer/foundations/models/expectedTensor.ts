/** What a weight is, for initialisation (normal for matrices, zeros for biases, ones for norms). */
export type WeightRole = 'embedding' | 'linear' | 'bias' | 'norm';

/** A tensor a checkpoint of a given config holds (weights.ts lists them per family; vision/visionWeights.ts the vision tower's). */
export interface ExpectedTensor {
  name: string;
  shape: number[];
  role: WeightRole;
}
