module.exports = {
  displayName: 'example-linear-regression',
  preset: '../../../jest.preset.js',
  testMatch: ['<rootDir>/src/**/*.spec.ts'],
};
