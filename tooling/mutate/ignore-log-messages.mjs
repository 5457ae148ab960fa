// A Stryker ignorer: the message text of a logger call (`log.warn("...", fields)`) is for people
// reading logs; emptying it loses or duplicates no work, and no test should pin prose. Only the
// message is ignored: removing the call or its fields is still a mutant.

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
    const call = path.parentPath?.node;
    if (call && isLogCall(call) && call.arguments[0] === path.node) return "log message text";
    return undefined;
  },
};

// The plugin shape of @stryker-mutator/api's declareValuePlugin(PluginKind.Ignore, ...), written out
// because pnpm keeps @stryker-mutator/api out of the root's reach.
export const strykerPlugins = [{ kind: "Ignore", name: "log-messages", value: ignorer }];
