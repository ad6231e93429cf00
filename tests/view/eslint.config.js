// tests/view/eslint.config.js - ESLint's rules for memflow view's JavaScript
// (tests/view_lint.sh): the page (a browser script), the browser tests and
// the benchmark (node scripts).  eslint's recommended rules, plus no
// undeclared globals and no unused variables.
"use strict";
const js = require("@eslint/js");

const browser = { window: "readonly", document: "readonly", location: "readonly", history: "readonly",
  fetch: "readonly", performance: "readonly", URLSearchParams: "readonly", ImageData: "readonly",
  DataView: "readonly", Uint8Array: "readonly", innerWidth: "readonly", setTimeout: "readonly",
  clearTimeout: "readonly", console: "readonly" };
const node = { require: "readonly", process: "readonly", console: "readonly", setTimeout: "readonly",
  URL: "readonly", __dirname: "readonly" };

module.exports = [
  js.configs.recommended,
  { files: ["view/*.js"], languageOptions: { ecmaVersion: 2022, sourceType: "script", globals: browser } },
  { files: ["tests/*.js", "bench/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...node, ...browser } } },
  { rules: { "no-unused-vars": ["error", { args: "none" }] } },
];
