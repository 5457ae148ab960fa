// What a failed activity tells the executor beyond its code and message, as its failure's details.
import { TokenUsageSchema } from "@flotilla/core";
import { z } from "zod";

/** The run's usage, on the failure of a run that had counted it (its answer missed the output schema): the task records it. */
export const FailureDetailsSchema = z.object({ usage: TokenUsageSchema });
export type FailureDetails = z.infer<typeof FailureDetailsSchema>;
