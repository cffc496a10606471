"""The JavaScript installed into every fresh `js`/`node` runtime before the user's code."""

PRELUDE = r"""// Installed into every fresh `js`/`node` runtime before the user's code. It owns the only
// references to the host bridge functions and removes them from the global object. Only well-formed
// strings and numbers cross the bridge: a lone surrogate cannot be converted to host text.
(() => {
  const hostWrite = globalThis.__tooldeck_write;
  const hostFs = globalThis.__tooldeck_fs;
  const hostExit = globalThis.__tooldeck_exit;
  const boot = globalThis.__tooldeck_boot;
  delete globalThis.__tooldeck_write;
  delete globalThis.__tooldeck_fs;
  delete globalThis.__tooldeck_exit;
  delete globalThis.__tooldeck_boot;
  const text = (s) => String(s).toWellFormed();
  const write = (stream, s) => hostWrite(stream, text(s));
  const setExit = (code) => { const n = Number(code); hostExit(Number.isFinite(n) ? Math.trunc(n) : 1); };

  const quote = (s) => "'" + s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n") + "'";
  const keyText = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k));
  function inspect(v, depth = 0, seen = new Set(), top = true) {
    switch (typeof v) {
      case "string": return top ? v : quote(v);
      case "number": return Object.is(v, -0) ? "-0" : String(v);
      case "bigint": return v + "n";
      case "undefined": return "undefined";
      case "boolean": return String(v);
      case "symbol": return v.toString();
      case "function": return v.prototype && /^class\b/.test(Function.prototype.toString.call(v))
        ? `[class ${v.name || "(anonymous)"}]` : `[Function: ${v.name || "(anonymous)"}]`;
    }
    if (v === null) return "null";
    if (seen.has(v)) return "[Circular *1]";
    if (v instanceof Error) {
      const head = `${v.name}: ${v.message}`;
      return v.stack ? `${head}\n${v.stack}`.trimEnd() : head;
    }
    if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (depth > 2) return Array.isArray(v) ? "[Array]" : "[Object]";
    seen.add(v);
    const sub = (x) => inspect(x, depth + 1, seen, false);
    let out;
    if (Array.isArray(v)) {
      const items = v.slice(0, 100).map(sub);
      if (v.length > 100) items.push(`... ${v.length - 100} more items`);
      out = items.length ? `[ ${items.join(", ")} ]` : "[]";
    } else if (v instanceof Map) {
      const items = [...v].map(([k, x]) => `${sub(k)} => ${sub(x)}`);
      const pairs = [...v].map(([k, x]) => `${sub(k)} => ${sub(x)}`);
      out = `Map(${v.size}) {` + (v.size ? " " + pairs.join(", ") + " }" : "}");
    } else if (v instanceof Set) {
      out = `Set(${v.size}) {` + (v.size ? " " + [...v].map(sub).join(", ") + " }" : "}");
    } else if (typeof v.then === "function") {
      out = "Promise { <pending> }";
    } else {
      const name = v.constructor && v.constructor !== Object && v.constructor.name ? v.constructor.name + " " : "";
      const entries = Object.keys(v).map((k) => `${keyText(k)}: ${sub(v[k])}`);
      out = entries.length ? `${name}{ ${entries.join(", ")} }` : `${name}{}`;
    }
    seen.delete(v);
    return out;
  }
  function format(args) {
    if (typeof args[0] === "string" && /%[sdifjoO%]/.test(args[0]) && args.length > 1) {
      let i = 1;
      const head = args[0].replace(/%([sdifjoO%])/g, (m, c) => {
        if (c === "%") return "%";
        if (i >= args.length) return m;
        const a = args[i++];
        if (c === "s") return typeof a === "string" ? a : inspect(a, 1, new Set(), false);
        if (c === "d" || c === "i") return String(c === "i" ? parseInt(a) : Number(a));
        if (c === "f") return String(parseFloat(a));
        if (c === "j") return JSON.stringify(a);
        return inspect(a, 0, new Set(), false);
      });
      return [head, ...args.slice(i).map((a) => inspect(a))].join(" ");
    }
    return args.map((a) => inspect(a)).join(" ");
  }
  const out = (...a) => write("stdout", format(a) + "\n");
  const err = (...a) => write("stderr", format(a) + "\n");
  globalThis.console = { log: out, info: out, debug: out, warn: err, error: err, trace: err,
    dir: (v) => write("stdout", inspect(v) + "\n"), table: (v) => write("stdout", JSON.stringify(v, null, 2) + "\n") };

  class FsError extends Error {}
  const fail = (code, message, op, path) => {
    const e = new FsError(`${code}: ${message}, ${op} '${text(path)}'`);
    e.code = code;
    e.path = path;
    throw e;
  };
  const call = (op, path, data) => {
    if (typeof path !== "string") throw new TypeError(`workspace.${op}: path must be a string`);
    if (!path.isWellFormed()) fail("EILSEQ", "file name holds a lone surrogate, which is not valid Unicode", op, path);
    const r = hostFs(op, path, data === undefined || data === null ? null : text(data));
    if (r.ok) return r.value;
    fail(r.code, r.message, op, path);
  };
  const workspace = Object.freeze({
    readText: (path) => call("readText", path),
    writeText: (path, text) => { call("writeText", path, String(text)); },
    appendText: (path, text) => { call("appendText", path, String(text)); },
    exists: (path) => call("exists", path),
    listFiles: (path = ".") => call("listFiles", path),
    remove: (path) => { call("remove", path); },
    readJSON: (path) => JSON.parse(call("readText", path)),
    writeJSON: (path, value) => { call("writeText", path, JSON.stringify(value, null, 2) + "\n"); },
  });
  globalThis.workspace = workspace;

  class ExitSignal extends Error {}
  const process = {
    argv: boot.argv.slice(),
    env: Object.assign({}, boot.env),
    exitCode: undefined,
    platform: "sandbox",
    version: "v0.0.0-quickjs",
    versions: {},
    cwd: () => boot.cwd,
    exit(code) {
      setExit(code === undefined ? (process.exitCode ?? 0) : code);
      throw new ExitSignal("process.exit");
    },
    stdout: { write: (s) => { write("stdout", String(s)); return true; } },
    stderr: { write: (s) => { write("stderr", String(s)); return true; } },
    nextTick: (fn, ...a) => { queueMicrotask(() => fn(...a)); },
  };
  globalThis.process = process;
  const hidden = (name, value) => Object.defineProperty(globalThis, Symbol.for(name), { value });
  hidden("tooldeck.print", (v) => { write("stdout", inspect(v) + "\n"); });
  hidden("tooldeck.exitCode", () => {
    const c = process.exitCode;
    if (c === undefined || c === null) return 0;
    const n = Number(c);
    return Number.isInteger(n) ? n & 255 : 1;
  });

  let nextTimer = 0;
  const cleared = new Set();
  globalThis.setTimeout = (fn, _ms, ...a) => {
    const id = ++nextTimer;
    Promise.resolve().then(() => { if (!cleared.has(id)) fn(...a); });
    return id;
  };
  globalThis.setImmediate = (fn, ...a) => globalThis.setTimeout(fn, 0, ...a);
  globalThis.clearTimeout = globalThis.clearImmediate = (id) => { cleared.add(id); };
  globalThis.setInterval = () => { throw new Error("setInterval is not available in the sandbox (no event loop)"); };
  globalThis.require = (name) => {
    throw new Error(`require('${name}') is not available in the sandbox: use ES module imports of workspace ` +
      "files (import { x } from './lib.js'); there are no Node built-in modules or npm packages");
  };
})();
"""
