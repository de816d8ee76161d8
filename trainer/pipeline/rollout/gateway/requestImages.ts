import type { ChatContentPart, ChatMessage } from '../../../contract/protocol/chatMessages';
import { ImageError, type PreparedImage } from '../../../foundations/models/vision/preprocess';
import { decodeBase64, type RolloutImages } from '../images';
import { ChatRequestError } from './chatRequest';

/**
 * The images of a request's messages (image_url parts, read by chatRequest.ts as base64 parts),
 * prepared for a vision-language model, and the messages with each image part naming its
 * content hash instead of its bytes: what the chat template renders (a placeholder), what a
 * training sequence keeps and records, and what an agent's re-sent history is compared by. An
 * image the model cannot take (a text-only model, unreadable bytes, too many pixels) is the
 * request's 400, naming the message part.
 */
export interface RequestImages {
  messages: ChatMessage[];
  /** The prepared images of each message, by message position. */
  byMessage: PreparedImage[][];
}

export async function prepareRequestImages(
  messages: readonly ChatMessage[],
  images: RolloutImages,
): Promise<RequestImages> {
  const byMessage: PreparedImage[][] = [];
  const out: ChatMessage[] = [];
  for (const [m, message] of messages.entries()) {
    const prepared: PreparedImage[] = [];
    byMessage.push(prepared);
    if (typeof message.content === 'string' || !message.content.some((part) => part.type === 'image')) {
      out.push(message);
      continue;
    }
    const content: ChatContentPart[] = [];
    for (const [p, part] of message.content.entries()) {
      if (part.type !== 'image' || part.base64 === undefined) {
        content.push(part);
        continue;
      }
      const where = `messages[${m}].content[${p}]`;
      try {
        const image = await images.prepare(decodeBase64(part.base64, where), where);
        prepared.push(image);
        content.push({ type: 'image', sha256: image.sha256 });
      } catch (error) {
        if (!(error instanceof ImageError)) throw error;
        throw new ChatRequestError(error.message, 400, `${where}.image_url`, 'invalid_image');
      }
    }
    out.push({ ...message, content } as ChatMessage);
  }
  return { messages: out, byMessage };
}
