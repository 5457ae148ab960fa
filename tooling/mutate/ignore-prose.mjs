// A Stryker ignorer for prose: the message text of a logger call (`log.warn("...", fields)`) and the
// literal text of a `message:` property (a validation issue's, an error's) are for people; emptying
// them loses or duplicates no work, and no test should pin prose. Only the text is ignored: removing
// the call, its fields, the issue or its path are still mutants.

const LEVELS = new Set(["debug", "info", "warn", "error"]);
const LOGGERS = new Set(["log", "logger"]);

/** `log`, `logger`, `this.log`, `this.logger`, `options.logger`... */
function isLogger(node) {
  if (node.type === "Identifier") return LOGGERS.has(node.name);
  return node.type === "MemberExpression" && !node.computed && node.property.type === "Identifier" && LOGGERS.has(node.property.name);
}

function isLogCall(node) {
  const callee = node.type === "CallExpression" ? node.callee : undefined;
  return callee?.type === "MemberExpression" && callee.property.type === "Identifier" && LEVELS.has(callee.property.name) && isLogger(callee.object);
}

const ignorer = {
  shouldIgnore(path) {
    if (!path.isStringLiteral() && !path.isTemplateLiteral()) return undefined;
    const parent = path.parentPath?.node;
    if (parent && isLogCall(parent) && parent.arguments[0] === path.node) return "log message text";
    const isMessage = parent?.type === "ObjectProperty" && parent.value === path.node && !parent.computed;
    if (isMessage && (parent.key.type === "Identifier" ? parent.key.name : parent.key.value) === "message") return "message text";
    return undefined;
  },
};

// The plugin shape of @stryker-mutator/api's declareValuePlugin(PluginKind.Ignore, ...), written out
// because pnpm keeps @stryker-mutator/api out of the root's reach.
export const strykerPlugins = [{ kind: "Ignore", name: "prose", value: ignorer }];
