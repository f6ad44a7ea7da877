// The whole stdio suite again with the Python launcher, the fallback when no
// C compiler was there at install time: both launchers keep one contract.
process.env.ALBEDO_LAUNCHER = 'python';
await import('./stdio.test.ts');
