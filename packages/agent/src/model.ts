import type { LanguageModelV4 } from "@ai-sdk/provider";
import { ErrorCodes, FlotillaError } from "@flotilla/core";
import { providerFetch } from "./provider-fetch.ts";
import { scriptedModel } from "./scripted.ts";

/** A model as the Vercel AI SDK's provider packages make it (`@ai-sdk/openai`, `@ai-sdk/anthropic`, …). */
export type LanguageModel = LanguageModelV4;

/** Makes the model for a `provider:model` name, or returns undefined to let the next rule decide. */
export type ProviderFactory = (model: string) => LanguageModel | undefined | Promise<LanguageModel | undefined>;

/** An endpoint that speaks OpenAI's chat-completions protocol: vLLM, Ollama, LM Studio, a gateway… */
export interface OpenAICompatibleEndpoint {
  /** e.g. `http://127.0.0.1:11434/v1` */
  baseURL: string;
  /** @default none */
  apiKey?: string;
  /** @default none */
  headers?: Record<string, string>;
  /**
   * Send an agent's output schema as `response_format: { type: "json_schema", json_schema: { schema,
   * strict } }` (vLLM, Ollama, LM Studio, OpenAI and most gateways know it); `false` sends only
   * `{ type: "json_object" }`, for a server that knows no more. Also
   * `FLOTILLA_PROVIDER_<NAME>_STRUCTURED_OUTPUTS=false`. @default true
   */
  structuredOutputs?: boolean;
}

export interface ModelResolverOptions {
  /** Asked first, for every model. */
  providerFactory?: ProviderFactory | undefined;
  /** OpenAI-compatible endpoints by provider name: `{ ollama: { baseURL } }` serves `ollama:llama3.2`. */
  openAICompatible?: Readonly<Record<string, OpenAICompatibleEndpoint>> | undefined;
  /**
   * Where API keys and base URLs are read: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …, and
   * `FLOTILLA_PROVIDER_<NAME>_BASE_URL` (+ `_API_KEY`) for more OpenAI-compatible endpoints.
   * @default process.env
   */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** More AI SDK provider packages by name, beside KNOWN_PROVIDERS: `{ deepseek: { pkg: "@ai-sdk/deepseek", factory: "createDeepSeek", apiKey: "DEEPSEEK_API_KEY" } }`. */
  packages?: Readonly<Record<string, KnownProvider>> | undefined;
}

export interface KnownProvider {
  /** The npm package, an optional peer dependency: a worker installs only the providers it uses. */
  pkg: string;
  factory: string;
  apiKey: string;
  baseURL?: string;
}

/** Provider packages the registry knows by name. */
export const KNOWN_PROVIDERS: Readonly<Record<string, KnownProvider>> = {
  openai: { pkg: "@ai-sdk/openai", factory: "createOpenAI", apiKey: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  anthropic: { pkg: "@ai-sdk/anthropic", factory: "createAnthropic", apiKey: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL" },
  google: { pkg: "@ai-sdk/google", factory: "createGoogleGenerativeAI", apiKey: "GOOGLE_GENERATIVE_AI_API_KEY" },
  mistral: { pkg: "@ai-sdk/mistral", factory: "createMistral", apiKey: "MISTRAL_API_KEY" },
  groq: { pkg: "@ai-sdk/groq", factory: "createGroq", apiKey: "GROQ_API_KEY" },
  xai: { pkg: "@ai-sdk/xai", factory: "createXai", apiKey: "XAI_API_KEY" },
};

const unavailable = (model: string, why: string) =>
  new FlotillaError(ErrorCodes.UNKNOWN_PROVIDER, `model "${model}" is not available on this worker: ${why}`, { details: { model } });

type ProviderFn = (modelId: string) => LanguageModel;

/**
 * Turns `provider:model` names into models, in this order: the worker's `providerFactory`; the
 * built-in `scripted` model; an OpenAI-compatible endpoint configured by name (options or
 * environment); a known provider package that is installed and has its API key set. Anything else
 * is an UNKNOWN_PROVIDER error naming the model and what is missing. Providers are made once, and
 * send through providerFetch (a `providerFactory`'s own providers should too, for rate limits).
 */
export class ModelResolver {
  private readonly options: ModelResolverOptions;
  private readonly providers = new Map<string, Promise<ProviderFn>>();

  constructor(options: ModelResolverOptions = {}) {
    this.options = options;
  }

  async resolve(model: string): Promise<LanguageModel> {
    const colon = model.indexOf(":");
    if (colon <= 0) throw unavailable(model, 'expected "provider:model"');
    const fromFactory = await this.options.providerFactory?.(model);
    if (fromFactory) return checked(model, fromFactory);
    const name = model.slice(0, colon);
    const modelId = model.slice(colon + 1);
    if (name === "scripted") return scriptedModel(modelId);
    let provider = this.providers.get(name);
    if (!provider) {
      provider = this.makeProvider(name, model);
      this.providers.set(name, provider);
      // A failed lookup (package missing, key unset) is tried afresh next time.
      provider.catch(() => this.providers.delete(name));
    }
    return checked(model, (await provider)(modelId));
  }

  private async makeProvider(name: string, model: string): Promise<ProviderFn> {
    const env = this.options.env ?? process.env;
    const envName = name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
    const fromEnv = (key: string) => env[`FLOTILLA_PROVIDER_${envName}_${key}`];
    const endpoint: OpenAICompatibleEndpoint | undefined =
      this.options.openAICompatible?.[name] ??
      (fromEnv("BASE_URL")
        ? {
            baseURL: fromEnv("BASE_URL")!,
            ...(fromEnv("API_KEY") && { apiKey: fromEnv("API_KEY") }),
            ...(fromEnv("STRUCTURED_OUTPUTS") && { structuredOutputs: !/^(false|0|no|off)$/i.test(fromEnv("STRUCTURED_OUTPUTS")!.trim()) }),
          }
        : undefined);
    if (endpoint) {
      const { createOpenAICompatible } = (await importProvider("@ai-sdk/openai-compatible", model)) as {
        createOpenAICompatible: (o: Record<string, unknown>) => { chatModel: ProviderFn };
      };
      const { structuredOutputs = true, ...connection } = endpoint;
      // Without supportsStructuredOutputs the provider drops the schema and asks for any JSON object;
      // strict decoding is its default then (`strictJsonSchema` in the agent's provider options turns it off).
      const provider = createOpenAICompatible({
        name,
        includeUsage: true,
        supportsStructuredOutputs: structuredOutputs,
        fetch: providerFetch(),
        ...connection,
      });
      return (id) => provider.chatModel(id);
    }
    const known = this.options.packages?.[name] ?? KNOWN_PROVIDERS[name];
    if (!known) {
      throw unavailable(
        model,
        `no provider "${name}": pass a providerFactory, configure an OpenAI-compatible endpoint, or use one of ${Object.keys(KNOWN_PROVIDERS).join(", ")}`,
      );
    }
    const apiKey = env[known.apiKey];
    if (!apiKey) throw unavailable(model, `set ${known.apiKey}`);
    const mod = (await importProvider(known.pkg, model)) as Record<string, (o: Record<string, unknown>) => ProviderFn>;
    const create = mod[known.factory];
    if (typeof create !== "function") throw unavailable(model, `${known.pkg} has no ${known.factory}()`);
    const baseURL = known.baseURL ? env[known.baseURL] : undefined;
    // providerFetch: a rate limit's pause holds a request up to the moment it leaves, and a 429's Retry-After pauses the fleet as its headers arrive.
    return create({ apiKey, ...(baseURL && { baseURL }), fetch: providerFetch() });
  }
}

async function importProvider(pkg: string, model: string): Promise<unknown> {
  try {
    return await import(pkg);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") throw unavailable(model, `install ${pkg} on the worker`);
    throw err;
  }
}

function checked(model: string, m: LanguageModel): LanguageModel {
  if ((m as { specificationVersion?: string }).specificationVersion !== "v4") {
    throw unavailable(
      model,
      `its provider implements model specification "${(m as { specificationVersion?: string }).specificationVersion}"; Flotilla needs "v4" (AI SDK 7 provider packages)`,
    );
  }
  return m;
}
