enum FakeBrazePlaceholder {}
