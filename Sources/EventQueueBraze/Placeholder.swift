enum BrazePlaceholder {}
