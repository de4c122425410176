"""Other tokenizers' files, one module per format (docs/interop.md):

  common.py     GPT-2's printable byte alphabet, the one assembler, bounded reads of text and JSON
  gpt2.py       GPT-2's vocab.json + merges.txt
  tiktoken.py   mergeable ranks, .tiktoken files, OpenAI's encodings as presets, tiktoken.Encoding
  openai.py     OpenAI's encodings by name from a folder of rank files (the tiktoken drop-in)
  tekken.py     Mistral's tekken JSON
  hf.py         Hugging Face tokenizer.json
  hf_folder.py  a Hugging Face export folder (save_pretrained, the chat template)
  cs336.py      the CS336 interface: (vocab, merges)

Empty on purpose: importing one format does not import the others.  `mnemo.interop` gathers
their public names where users import them.
"""
