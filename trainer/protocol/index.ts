export * from './version';
export * from './environment';
export * from './messages';
export * from './parse';
export * from './runStore';
export * from './tokens';
export * from './panels';
