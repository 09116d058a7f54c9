module.exports = {
  displayName: 'docker',
  preset: '../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  testPathIgnorePatterns: ['\\.(integration|container)\\.spec\\.ts$'],
};
