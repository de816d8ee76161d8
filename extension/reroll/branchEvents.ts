import * as vscode from 'vscode';

/** A re-roll saved branches of a trajectory (the Trajectories panels showing its run list them again). */
export interface BranchesChanged {
  runDirectory: string;
  step: number;
  index: number;
}

export const branchesChanged = new vscode.EventEmitter<BranchesChanged>();
