// The CloudFront Functions in this directory use only what JavaScript
// runtime 2.0 documents (AWS, "JavaScript runtime 2.0 features for
// CloudFront Functions"): ES 5.1, plus const and let, async and await (in
// function declarations), arrow functions, template literals, rest
// parameters, the ** operator, and the listed built-ins and modules. Node
// runs far more, so the vectors in edge.test.mjs cannot catch a feature
// CloudFront refuses at publish time; this test parses each file with
// acorn (pinned in infra/package.json) and walks it against an allowlist of
// node types, operators, regex flags, globals, static members, methods and
// modules. Anything not on the lists fails, naming the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'acorn';

const here = dirname(fileURLToPath(import.meta.url));
export const FUNCTIONS = ['edge-check.js', 'strip-prefix.js', 'page-index.js'];

// Node types (ESTree, as acorn names them) of the documented language.
const NODES = new Set([
  'Program', 'ImportDeclaration', 'ImportDefaultSpecifier',
  'VariableDeclaration', 'VariableDeclarator', 'FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression',
  'BlockStatement', 'ExpressionStatement', 'EmptyStatement', 'IfStatement', 'ForStatement', 'ForInStatement',
  'WhileStatement', 'DoWhileStatement', 'BreakStatement', 'ContinueStatement', 'ReturnStatement', 'SwitchStatement',
  'SwitchCase', 'ThrowStatement', 'TryStatement', 'CatchClause', 'LabeledStatement',
  'Identifier', 'Literal', 'TemplateLiteral', 'TemplateElement', 'ArrayExpression', 'ObjectExpression', 'Property',
  'MemberExpression', 'CallExpression', 'NewExpression', 'UnaryExpression', 'UpdateExpression', 'BinaryExpression',
  'LogicalExpression', 'AssignmentExpression', 'ConditionalExpression', 'SequenceExpression', 'ThisExpression',
  'AwaitExpression', 'RestElement',
]);
// ES 5.1's assignment operators (no **=, &&=, ||=, ??=).
const ASSIGN = new Set(['=', '+=', '-=', '*=', '/=', '%=', '<<=', '>>=', '>>>=', '&=', '^=', '|=']);
// ES 5.1's logical operators (no ??).
const LOGICAL = new Set(['&&', '||']);
// ES 5.1's regular expression flags.
const REGEX_FLAGS = new Set(['g', 'i', 'm']);
// The modules a function may require, and the one it may import.
const MODULES = new Set(['crypto', 'querystring']);
const IMPORTS = new Set(['cloudfront']);

// Globals and the static members documented for each (null: no members used).
const GLOBALS = {
  Object: ['keys', 'create', 'defineProperty', 'defineProperties', 'freeze', 'getOwnPropertyDescriptor', 'getOwnPropertyDescriptors',
    'getOwnPropertyNames', 'getPrototypeOf', 'isExtensible', 'isFrozen', 'isSealed', 'preventExtensions', 'seal', 'assign',
    'entries', 'values', 'prototype'],
  String: ['fromCharCode', 'fromCodePoint', 'raw', 'prototype'],
  Number: ['isFinite', 'isInteger', 'isNaN', 'isSafeInteger', 'parseFloat', 'parseInt', 'EPSILON', 'MAX_SAFE_INTEGER',
    'MIN_SAFE_INTEGER', 'MAX_VALUE', 'MIN_VALUE', 'NaN', 'NEGATIVE_INFINITY', 'POSITIVE_INFINITY', 'prototype'],
  Math: ['abs', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'atan2', 'cbrt', 'ceil', 'clz32', 'cos', 'cosh', 'exp', 'expm1',
    'floor', 'fround', 'hypot', 'imul', 'log', 'log1p', 'log2', 'log10', 'max', 'min', 'pow', 'random', 'round', 'sign', 'sin',
    'sinh', 'sqrt', 'tan', 'tanh', 'trunc', 'E', 'LN10', 'LN2', 'LOG10E', 'LOG2E', 'PI', 'SQRT1_2', 'SQRT2'],
  Date: ['now', 'parse', 'UTC'],
  JSON: ['parse', 'stringify'],
  Array: ['isArray', 'of', 'prototype'],
  RegExp: null,
  Promise: ['resolve', 'reject', 'all'],
  Buffer: ['alloc', 'allocUnsafe', 'byteLength', 'compare', 'concat', 'from', 'isBuffer', 'isEncoding'],
  Error: null, TypeError: null, RangeError: null, SyntaxError: null, ReferenceError: null, URIError: null, EvalError: null,
  console: ['log'],
  isFinite: null, isNaN: null, parseInt: null, parseFloat: null,
  encodeURIComponent: null, decodeURIComponent: null, encodeURI: null, decodeURI: null,
  undefined: null, NaN: null, Infinity: null,
  require: null,
};

// Methods documented on the built-in prototypes and module objects; a call
// x.m() on anything but a global must name one of them.
const METHODS = new Set([
  // Object.prototype, Function.prototype
  'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toString', 'valueOf', 'toLocaleString', 'apply', 'bind', 'call',
  // String.prototype
  'charAt', 'charCodeAt', 'codePointAt', 'concat', 'endsWith', 'includes', 'indexOf', 'lastIndexOf', 'localeCompare', 'match',
  'normalize', 'padEnd', 'padStart', 'repeat', 'replace', 'replaceAll', 'search', 'slice', 'split', 'startsWith', 'substr',
  'substring', 'toLowerCase', 'toUpperCase', 'trim', 'trimEnd', 'trimStart',
  // Array.prototype
  'copyWithin', 'every', 'fill', 'filter', 'find', 'findIndex', 'forEach', 'join', 'map', 'pop', 'push', 'reduce', 'reduceRight',
  'reverse', 'shift', 'some', 'sort', 'splice', 'unshift',
  // Number.prototype, Date.prototype (ES 5.1)
  'toExponential', 'toFixed', 'toPrecision', 'getTime', 'getFullYear', 'getMonth', 'getDate', 'getDay', 'getHours', 'getMinutes',
  'getSeconds', 'getMilliseconds', 'getUTCFullYear', 'getUTCMonth', 'getUTCDate', 'getUTCDay', 'getUTCHours', 'getUTCMinutes',
  'getUTCSeconds', 'getUTCMilliseconds', 'toISOString', 'toUTCString', 'toJSON',
  // RegExp.prototype, Promise.prototype
  'exec', 'test', 'then', 'catch', 'finally',
  // crypto (createHash, createHmac; hash/hmac update and digest), querystring
  'createHash', 'createHmac', 'update', 'digest', 'stringify', 'parse', 'escape', 'unescape', 'decode', 'encode',
  // Buffer.prototype (runtime 2.0)
  'equals', 'compare', 'readUInt8', 'readUInt16BE', 'readUInt16LE', 'readUInt32BE', 'readUInt32LE', 'readInt8', 'readInt16BE',
  'readInt16LE', 'readInt32BE', 'readInt32LE', 'write', 'writeUInt8', 'copy', 'subarray', 'toJSON',
  // the KeyValueStore helpers (cf.kvs(): get, exists, meta)
  'kvs', 'get', 'exists', 'meta',
]);

/** check returns the problems of src, one "line N: what" string each. */
export function check(src) {
  let ast;
  try {
    ast = parse(src, { ecmaVersion: 'latest', sourceType: 'module', locations: true });
  } catch (e) {
    return [`does not parse: ${e.message}`];
  }
  const problems = [];
  const bad = (node, what) => problems.push(`line ${node.loc.start.line}: ${what}`);
  const declared = new Set();
  const refs = [];

  const visit = (node, parent, key) => {
    if (!node || typeof node.type !== 'string') return;
    if (!NODES.has(node.type)) {
      bad(node, `${node.type} is not in the runtime`);
    }
    switch (node.type) {
      case 'ImportDeclaration':
        if (!IMPORTS.has(node.source.value) || node.specifiers.length !== 1 || node.specifiers[0].type !== 'ImportDefaultSpecifier') {
          bad(node, `import from '${node.source.value}' (only a default import of ${[...IMPORTS]})`);
        }
        declared.add(node.specifiers[0]?.local.name);
        break;
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        if (node.generator) bad(node, 'generator function');
        if (node.async && node.type !== 'FunctionDeclaration') bad(node, 'async function expression or arrow (async closures are not supported)');
        if (node.id) declared.add(node.id.name);
        for (const p of node.params) {
          const id = p.type === 'RestElement' ? p.argument : p;
          if (id.type !== 'Identifier') bad(p, `${id.type} parameter (no defaults or destructuring)`);
          else declared.add(id.name);
        }
        break;
      case 'VariableDeclarator':
        if (node.id.type !== 'Identifier') bad(node, `${node.id.type} in a declaration (no destructuring)`);
        else declared.add(node.id.name);
        break;
      case 'CatchClause':
        if (!node.param) bad(node, 'catch without a binding');
        else if (node.param.type !== 'Identifier') bad(node, 'destructuring in catch');
        else declared.add(node.param.name);
        break;
      case 'RestElement':
        if (!(parent && /Function/.test(parent.type) && key === 'params')) bad(node, 'rest element outside a parameter list');
        break;
      case 'Property':
        if (node.computed) bad(node, 'computed property key');
        if (node.shorthand) bad(node, 'shorthand property');
        if (node.method) bad(node, 'method shorthand');
        break;
      case 'MemberExpression':
      case 'CallExpression':
        if (node.optional) bad(node, 'optional chaining');
        break;
      case 'LogicalExpression':
        if (!LOGICAL.has(node.operator)) bad(node, `operator ${node.operator}`);
        break;
      case 'AssignmentExpression':
        if (!ASSIGN.has(node.operator)) bad(node, `operator ${node.operator}`);
        if (node.left.type !== 'Identifier' && node.left.type !== 'MemberExpression') bad(node, 'destructuring assignment');
        break;
      case 'Literal':
        if (node.regex) {
          for (const f of node.regex.flags) if (!REGEX_FLAGS.has(f)) bad(node, `regular expression flag ${f}`);
        }
        if (node.bigint !== undefined) bad(node, 'BigInt literal');
        if (typeof node.value === 'number' && /_|^0[bBoO]/.test(node.raw)) bad(node, `number literal ${node.raw}`);
        break;
      case 'Identifier':
        if (isReference(node, parent, key)) refs.push(node);
        break;
    }
    for (const k of Object.keys(node)) {
      if (k === 'loc' || k === 'start' || k === 'end') continue;
      const v = node[k];
      if (Array.isArray(v)) v.forEach((c) => visit(c, node, k));
      else if (v && typeof v.type === 'string') visit(v, node, k);
    }
    if (node.type === 'CallExpression') checkCall(node, bad);
    if (node.type === 'MemberExpression' && node.object.type === 'Identifier' && !node.computed && Object.hasOwn(GLOBALS, node.object.name)) {
      const members = GLOBALS[node.object.name];
      if (members && !members.includes(node.property.name)) bad(node, `${node.object.name}.${node.property.name} is not documented`);
    }
  };
  visit(ast, null, null);
  for (const id of refs) {
    if (!declared.has(id.name) && !Object.hasOwn(GLOBALS, id.name)) bad(id, `global ${id.name} is not in the runtime`);
  }
  if (!ast.body.some((s) => s.type === 'FunctionDeclaration' && s.id.name === 'handler')) {
    problems.push('no top-level function handler');
  }
  return problems;
}

// isReference: an identifier that names a variable, not a property key,
// a member name, a label or a declaration.
function isReference(node, parent, key) {
  if (!parent) return true;
  switch (parent.type) {
    case 'MemberExpression': return key === 'object' || parent.computed;
    case 'Property': return key === 'value';
    case 'LabeledStatement': case 'BreakStatement': case 'ContinueStatement': return false;
    case 'VariableDeclarator': return key === 'init';
    case 'FunctionDeclaration': case 'FunctionExpression': case 'ArrowFunctionExpression': return key === 'body';
    case 'CatchClause': return key !== 'param';
    case 'ImportDefaultSpecifier': return false;
    case 'RestElement': return false;
    default: return true;
  }
}

function checkCall(node, bad) {
  const c = node.callee;
  if (c.type === 'Identifier' && c.name === 'require') {
    const m = node.arguments[0];
    if (node.arguments.length !== 1 || m.type !== 'Literal' || !MODULES.has(m.value)) bad(node, `require of ${m && m.value} (only ${[...MODULES]})`);
    return;
  }
  if (c.type === 'MemberExpression' && !c.computed) {
    const onGlobal = c.object.type === 'Identifier' && Object.hasOwn(GLOBALS, c.object.name);
    if (!onGlobal && !METHODS.has(c.property.name)) bad(node, `method ${c.property.name}() is not documented`);
  }
}

for (const f of FUNCTIONS) {
  test(`${f} uses only CloudFront Functions runtime 2.0 features`, () => {
    assert.deepEqual(check(readFileSync(join(here, f), 'utf8')), []);
  });
}

test('the checker refuses what the runtime lacks', () => {
  const wrap = (body) => `function handler(event) {\n${body}\nreturn event.request;\n}`;
  const refused = {
    'for-of': 'for (const x of [1]) {}',
    'class': 'class A {}',
    'class expression': 'const A = class {};',
    'optional chaining': 'const a = event?.request;',
    'optional call': 'event.f?.();',
    'unicode regex flag': 'const r = /a/u;',
    'sticky regex flag': 'const r = /a/y;',
    'dotAll regex flag': 'const r = /a/s;',
    'indices regex flag': 'const r = /a/d;',
    'spread in a call': 'Math.max(...[1, 2]);',
    'spread in an array': 'const a = [...[1]];',
    'object spread': 'const o = { ...event };',
    'object destructuring': 'const { request } = event;',
    'array destructuring': 'const [a] = [1];',
    'destructuring assignment': 'let a; [a] = [1];',
    'default parameter': 'const f = function (a = 1) { return a; };',
    'destructured parameter': 'const f = function ({ a }) { return a; };',
    'nullish coalescing': 'const a = event.x ?? 1;',
    'logical assignment': 'let a = 0; a ||= 1;',
    'exponent assignment': 'let a = 2; a **= 2;',
    'async arrow': 'const f = async () => 1;',
    'async function expression': 'const f = async function () { return 1; };',
    'generator': 'function* g() { yield 1; }',
    'shorthand property': 'const request = 1; const o = { request };',
    'computed key': 'const k = "a"; const o = { [k]: 1 };',
    'method shorthand': 'const o = { f() { return 1; } };',
    'getter in a class-like object is fine, but a tagged template is not': 'String.raw`a`;',
    'numeric separator': 'const n = 1_000;',
    'binary literal': 'const n = 0b101;',
    'BigInt': 'const n = 10n;',
    'optional catch binding': 'try { event.x(); } catch { }',
    'Map': 'const m = new Map();',
    'Symbol': 'const s = Symbol("x");',
    'Array.from': 'const a = Array.from("ab");',
    'Object.fromEntries': 'const o = Object.fromEntries([]);',
    'Array.prototype.at': 'const a = [1].at(0);',
    'Array.prototype.flatMap': 'const a = [1].flatMap(function (x) { return [x]; });',
    'String.prototype.matchAll': 'const a = "a".matchAll(/a/g);',
    'setTimeout': 'setTimeout(function () {}, 1);',
    'eval': 'eval("1");',
    'the Function constructor': 'const f = new Function("return 1");',
    'require of fs': 'const fs = require("fs");',
    'new.target': 'function F() { return new.target; }',
  };
  for (const [name, body] of Object.entries(refused)) {
    assert.notDeepEqual(check(wrap(body)), [], `${name} passed the checker: ${body}`);
  }
  assert.notDeepEqual(check(`import fs from 'fs';\n${wrap('')}`), [], 'an import of fs passed');
  assert.notDeepEqual(check('export function handler(event) { return event.request; }'), [], 'an export passed');
  assert.deepEqual(check('function h(event) { return event.request; }'), ['no top-level function handler']);
});

test('the checker accepts the documented features', () => {
  const src = `import cf from 'cloudfront';
const crypto = require('crypto');
const qs = require('querystring');
var kvs = cf.kvs();
let n = 2 ** 10;
const re = /^[a-z]+$/gim;
async function handler(event) {
  const req = event.request;
  const parts = \`\${req.uri}-\${n}\`.split('-');
  const f = (a, ...rest) => a + rest.length;
  const o = { a: 1, 'b-c': [1, 2], get g() { return 1; } };
  for (var k in o) { if (o.hasOwnProperty(k)) n += f(1, 2, 3); }
  outer: for (let i = 0; i < 2; i++) { do { continue outer; } while (false); }
  switch (typeof req) { case 'object': break; default: throw new TypeError('no'); }
  try { await kvs.get('k'); } catch (e) { n--; } finally { n++; }
  const h = crypto.createHmac('sha256', 'k').update('x').digest('hex');
  const b = Buffer.from(h, 'hex');
  return Object.keys(o).length > 0 && Number.isInteger(n) && re.test('a') && b.length > 0 && qs.stringify({}) === ''
    ? req : { statusCode: Math.max(400, parseInt('404', 10)), statusDescription: JSON.stringify(parts.map(function (s) { return s.trim(); })) };
}`;
  assert.deepEqual(check(src), []);
});
